"""Checkpoint verification: the rules a new task state must satisfy against the previous one.

The compressor is not trusted (DESIGN.md, idea 5): every change between two states is either
declared (pending → completed, anything → `dropped` with a reason, a goal change with
`goal_change_reason`, an approval decided by an `approver`) or reported as a violation with a
fixed rule id. Pure functions: no storage, no clock.
"""

from __future__ import annotations

from collections.abc import Iterable

from ctxkeep.models import Approval, Fact, TaskState, Violation
from ctxkeep.text import match_key, value_key
from ctxkeep.tools.shared.negation import appears_unnegated, negated_clauses, negation_form
from ctxkeep.tools.compaction_check import Item, check_summary

_FIXED_APPROVAL_FIELDS = ("action", "target", "amount", "currency")


def verify_states(before: TaskState, after: TaskState, goal_change_reason: str | None = None) -> list[Violation]:
    """Every rule `after` breaks relative to `before`, in a stable order (empty when it is sound)."""
    violations: list[Violation] = []
    if match_key(before.goal) != match_key(after.goal) and not (goal_change_reason or "").strip():
        violations.append(
            Violation(
                rule="goal_changed",
                item=before.goal,
                detail=f"goal became {after.goal!r}; keep the goal, or send goal_change_reason saying why it changed",
            )
        )
    violations += _kept_items(before, after, "constraint", before.constraints, after.constraints)
    violations += _pending_accounted(before, after)
    violations += _completed_kept(before, after)
    violations += _kept_items(before, after, "decision", before.decisions, after.decisions)
    violations += _facts_kept(before, after)
    violations += _approvals_kept(before, after)
    return violations


def check_new_state(state: TaskState) -> list[Violation]:
    """Rules that hold for a first version too: a decided approval names who decided and when."""
    return [v for approval in state.approvals for v in [_undecided(approval)] if v]


def _dropped(state: TaskState, kind: str) -> set[str]:
    return {match_key(d.item) for d in state.dropped if d.kind == kind}


def _texts(state: TaskState) -> list[str]:
    return [
        *state.constraints,
        *state.decisions,
        *state.plan,
        *state.pending,
        *state.completed,
        *state.done_criteria,
        *(state.next_action or "",),
    ]


def _kept_items(before: TaskState, after: TaskState, kind: str, old: list[str], new: list[str]) -> list[Violation]:
    """Constraints and decisions stay (up to the negation word used), or leave through `dropped`."""
    present = {match_key(item) for item in new} | {negation_form(item) for item in new}
    dropped = _dropped(after, kind)
    negations_after = {clause for item in [*after.constraints, *after.decisions] for clause in negated_clauses(item)}
    out = []
    for item in old:
        if match_key(item) in present or negation_form(item) in present or match_key(item) in dropped:
            continue
        lost = [c for c in negated_clauses(item) if c not in negations_after]
        flipped = [c for c in lost if any(appears_unnegated(c, text) for text in _texts(after))]
        if flipped:
            out.append(
                Violation(
                    rule="negation_lost",
                    item=item,
                    detail=f"the negated clause {flipped[0]!r} now appears without its negation; restore the {kind} "
                    "or list it in dropped with a reason",
                )
            )
        else:
            out.append(
                Violation(
                    rule=f"{kind}_dropped",
                    item=item,
                    detail=f"the {kind} is gone; keep it, or list it in dropped with kind {kind!r} and a reason",
                )
            )
    return out


def _pending_accounted(before: TaskState, after: TaskState) -> list[Violation]:
    accounted = {match_key(i) for i in [*after.pending, *after.completed]} | _dropped(after, "pending")
    return [
        Violation(
            rule="pending_unaccounted",
            item=item,
            detail="the pending item vanished; keep it in pending, move it to completed, or list it in dropped "
            "with kind 'pending' and a reason",
        )
        for item in before.pending
        if match_key(item) not in accounted
    ]


def _completed_kept(before: TaskState, after: TaskState) -> list[Violation]:
    """A completed item stays: one that vanishes hides a side effect that may be repeated."""
    kept = {match_key(i) for i in after.completed} | _dropped(after, "completed")
    return [
        Violation(
            rule="completed_dropped",
            item=item,
            detail="the completed item vanished (the work could be repeated); keep it in completed, or list it in "
            "dropped with kind 'completed' and a reason (archive long lists to evidence and keep a counter)",
        )
        for item in before.completed
        if match_key(item) not in kept
    ]


def _by_key(facts: Iterable[Fact]) -> dict[str, Fact]:
    return {match_key(f.key): f for f in facts}


def _fact_text(fact: Fact) -> str:
    return f"{fact.value} {fact.unit}" if fact.unit else str(fact.value)


def _facts_kept(before: TaskState, after: TaskState) -> list[Violation]:
    new, dropped, out = _by_key(after.facts), _dropped(after, "fact"), []
    for key, old in _by_key(before.facts).items():
        fact = new.get(key)
        if fact is None:
            if key not in dropped:
                out.append(
                    Violation(
                        rule="fact_dropped",
                        item=old.key,
                        detail=f"the fact ({_fact_text(old)}) is gone; keep it, or list its key in dropped with kind "
                        "'fact' and a reason",
                    )
                )
            continue
        same_value = value_key(old.value) == value_key(fact.value) and match_key(old.unit or "") == match_key(
            fact.unit or ""
        )
        new_source = bool(fact.source_ref) and match_key(fact.source_ref or "") != match_key(old.source_ref or "")
        if not same_value and not new_source:
            out.append(
                Violation(
                    rule="fact_changed",
                    item=old.key,
                    detail=f"value changed from {_fact_text(old)!r} to {_fact_text(fact)!r} without a new source_ref; "
                    "keep the old value, or cite where the new one comes from in source_ref",
                )
            )
    return out


def _invalid(approval: Approval, detail: str) -> Violation:
    return Violation(rule="approval_transition_invalid", item=approval.id, detail=detail)


def _undecided(approval: Approval) -> Violation | None:
    """A decision names who made it and when."""
    if approval.status == "pending" or (approval.approver and approval.decided_at):
        return None
    return _invalid(
        approval,
        f"status is {approval.status!r} without {'an approver' if not approval.approver else 'decided_at'}; "
        "send the approver who decided and when (decided_at), or keep the status 'pending'",
    )


def _approval_change(old: Approval, new: Approval) -> Violation | None:
    for field in _FIXED_APPROVAL_FIELDS:
        was, now = getattr(old, field), getattr(new, field)
        if value_key(was if was is not None else "") != value_key(now if now is not None else ""):
            return _invalid(
                old,
                f"{field} changed from {was!r} to {now!r}; an approval's action, target, amount and "
                "currency are fixed: drop it with a reason and request a new approval",
            )
    if old.status != "pending":
        for field in ("status", "approver", "decided_at"):
            if getattr(old, field) != getattr(new, field):
                return _invalid(
                    old,
                    f"{field} of a decided approval changed from {getattr(old, field)!r} to "
                    f"{getattr(new, field)!r}; a decision is final: drop it with a reason and request a new approval",
                )
        return None
    return _undecided(new) if new.status != "pending" else None


def _approvals_kept(before: TaskState, after: TaskState) -> list[Violation]:
    new = {match_key(a.id): a for a in after.approvals}
    old_ids = {match_key(a.id) for a in before.approvals}
    dropped, out = _dropped(after, "approval"), []
    for old in before.approvals:
        approval = new.get(match_key(old.id))
        if approval is None:
            if match_key(old.id) not in dropped:
                out.append(
                    Violation(
                        rule="approval_removed",
                        item=old.id,
                        detail=f"the approval ({old.action}, status {old.status!r}) is gone; keep it, or list its id "
                        "in dropped with kind 'approval' and a reason",
                    )
                )
            continue
        change = _approval_change(old, approval)
        if change:
            out.append(change)
    return out + [v for a in after.approvals if match_key(a.id) not in old_ids for v in [_undecided(a)] if v]


def summary_items(state: TaskState) -> list[Item]:
    """What a summary of `state` must carry: goal, pending and completed items, open approvals, constraints, critical
    facts."""
    items = [Item("goal", state.goal)]
    items += [Item("pending", item) for item in state.pending]
    items += [Item("completed", item) for item in state.completed]
    items += [Item("approval", a.action, value=a.id) for a in state.approvals if a.status == "pending"]
    items += [Item("constraint", c) for c in state.constraints]
    items += [Item("fact", f.key, value=value_key(f.value)) for f in state.facts if f.critical]
    return items


def verify_summary(state: TaskState, summary: str, exact: bool = True) -> list[Violation]:
    """What a free-text summary of `state` lost (`ctxkeep.tools.compaction_check.check`); `exact`: items must be quoted."""
    return [
        Violation(
            rule=f.rule,
            item=f.item.value if f.item.kind == "approval" and f.item.value else f.item.text,
            detail=f.detail,
        )
        for f in check_summary(summary_items(state), summary, exact)
    ]
