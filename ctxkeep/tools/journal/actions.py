"""The action journal: action_intent before an external side effect, action_result after it.

One entry per idempotency key. The same intent sent again is the same entry (and says what
is known of it); a different intent under a used key, a result without an intent, and a
second, different result are refused, the last showing the result already recorded.
"""

from __future__ import annotations

from datetime import datetime

from ctxkeep.errors import NotFound, Refused
from ctxkeep.models.journal import (
    Action,
    ActionIntentRequest,
    ActionIntentResult,
    ActionResultRequest,
    ActionResultResult,
)
from ctxkeep.storage import ActionRow
from ctxkeep.text import one_line, utc_text, utc_moment
from ctxkeep.tools.evidence import load_row
from ctxkeep.tools.redaction.stored import redacted
from ctxkeep.tools.scope import Scope


def to_action(row: ActionRow) -> Action:
    return Action(
        idempotency_key=row.idempotency_key,
        task_id=row.task_id,
        action=row.action,
        target=row.target,
        params_summary=row.params_summary,
        intent_at=utc_moment(row.intent_at),
        status=row.status,  # type: ignore[arg-type]
        external_id=row.external_id,
        receipt_ref=row.receipt_ref,
        detail=row.detail,
        result_at=utc_moment(row.result_at) if row.result_at else None,
    )


MAX_SHOWN_CHARS = 200  # of an action or target in the lines working sets and briefs show


def _when(moment: datetime | None) -> str:
    return (utc_text(moment) or "?")[:19] + "Z" if moment else "?"


def _short(text: str) -> str:
    return one_line(text, MAX_SHOWN_CHARS - 1)


def describe(entry: Action) -> str:
    """One line naming the entry: key, action, target, and its result when there is one."""
    line = (
        f"{entry.idempotency_key}: {_short(entry.action)} → {_short(entry.target)} (intended {_when(entry.intent_at)})"
    )
    if entry.status == "open":
        return line
    extras = [
        f"external_id {entry.external_id}" if entry.external_id else "",
        f"receipt {entry.receipt_ref}" if entry.receipt_ref else "",
    ]
    return f"{line}; result {entry.status} at {_when(entry.result_at)}" + "".join(f", {e}" for e in extras if e)


def open_intent_warning(entry: Action) -> str:
    return (
        f"outcome unknown: look up `{entry.idempotency_key}` in the system of record before retrying "
        f"({_short(entry.action)} → {_short(entry.target)}, intended {_when(entry.intent_at)}); then record action_result"
    )


def _advice(entry: Action, recorded: bool) -> str:
    if recorded:
        return (
            f"recorded: perform the side effect with idempotency key {entry.idempotency_key!r} where the system supports "
            "one, then call action_result with its outcome"
        )
    if entry.status == "open":
        return "this intent was already recorded and has no result: " + open_intent_warning(entry)
    if entry.status == "succeeded":
        return f"already done, do not repeat it: {describe(entry)}"
    return (
        f"this attempt is closed ({describe(entry)}); trying again is a new side effect: record it with a new "
        "idempotency key (for example with a step suffix such as ':retry-1')"
    )


async def action_intent(scope: Scope, req: ActionIntentRequest) -> ActionIntentResult:
    """Record that a side effect is about to happen (every field redacted, the key too: the same key sent again is the
    same entry). Raises Refused when the key is taken by a different intent."""
    req, _ = redacted(req, "the intent")
    row = ActionRow(
        req.idempotency_key,
        req.task_id,
        req.action,
        req.target,
        req.params_summary,
        utc_text(scope.clock()) or "",
        "open",
        None,
        None,
        None,
        None,
    )
    async with scope.store.transaction() as tx:
        if await tx.checkpoints.latest_version(scope.project, req.task_id) == 0:
            raise NotFound(
                f"no task {req.task_id!r} in this project: an intent is reported when its task is resumed, so "
                "checkpoint_save the task first (checkpoint_list shows the tasks here)"
            )
        recorded = await tx.journal.insert_intent(scope.project, row)
        held = None if recorded else await tx.journal.get(scope.project, req.idempotency_key)
    if held is None:
        return ActionIntentResult(entry=to_action(row), recorded=True, advice=_advice(to_action(row), True))
    if (held.task_id, held.action, held.target, held.params_summary) != (
        row.task_id,
        row.action,
        row.target,
        row.params_summary,
    ):
        raise Refused(
            f"action_intent refused: idempotency key {req.idempotency_key!r} already names another side effect "
            f"(task {held.task_id}: {held.action} → {held.target}, params {held.params_summary or 'none'}); "
            "use a new key (task:object:step) for a different action"
        )
    return ActionIntentResult(entry=to_action(held), recorded=False, advice=_advice(to_action(held), False))


async def action_result(scope: Scope, req: ActionResultRequest) -> ActionResultResult:
    """Record the outcome of an intended side effect, once. Raises Refused without an intent or when a different
    result is already recorded (shown in the message); a receipt_ref must be stored evidence. Every field is redacted
    first (the key as action_intent stored it)."""
    req, _ = redacted(req, "the result")
    async with scope.store.transaction() as tx:
        held = await tx.journal.get(scope.project, req.idempotency_key)
        if held is None:
            raise Refused(
                f"action_result refused: no intent recorded for {req.idempotency_key!r}. Call action_intent before "
                "a side effect; if it already ran without one, record the intent now, then this result"
            )
        receipt = req.receipt_ref
        if receipt is not None:
            try:
                receipt = (await load_row(tx, scope, receipt, prefix_ok=True)).ref
            except NotFound as exc:
                raise Refused(
                    f"action_result refused: receipt_ref {receipt!r} is not stored in this project; evidence_put the "
                    "receipt first and send the ref it returns"
                ) from exc
        row = ActionRow(
            held.idempotency_key,
            held.task_id,
            held.action,
            held.target,
            held.params_summary,
            held.intent_at,
            req.status,
            req.external_id,
            receipt,
            req.detail,
            utc_text(scope.clock()),
        )
        if held.status == "open":
            if await tx.journal.set_result(scope.project, row):
                return ActionResultResult(entry=to_action(row), recorded=True)
            held = await tx.journal.get(scope.project, req.idempotency_key)  # a concurrent call recorded one first
            assert held is not None
    if (held.status, held.external_id, held.receipt_ref, held.detail) == (
        row.status,
        row.external_id,
        row.receipt_ref,
        row.detail,
    ):
        return ActionResultResult(entry=to_action(held), recorded=False)
    raise Refused(
        f"action_result refused: {req.idempotency_key!r} already has a result, and a result is final: {describe(to_action(held))}"
        f"{'; detail: ' + held.detail if held.detail else ''}. Record a follow-up side effect under a new key"
    )
