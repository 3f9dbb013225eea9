"""build_working_set: the context for an agent's next step, rebuilt from stored state within a token budget.

Slots in a fixed order, stable first: policy, goal, state, memory, history, evidence, recent,
next action (reserve is headroom, never filled). Hard filters (project, task, validity, expiry)
run in the evidence and memory queries, before any ranking. Control rules are never cut: a budget that cannot
hold them is refused. The result is deterministic for the same stored records and request, and
the selection is remembered per task so the next call can report a diff and keep its picks.
"""

from __future__ import annotations

import functools
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from ctxkeep.errors import InvalidInput
from ctxkeep.models.working_set import (
    Block,
    CacheBreakpoint,
    CompressAdvice,
    DroppedItem,
    Slot,
    WorkingSetDiff,
    WorkingSetRequest,
    WorkingSetResult,
)
from ctxkeep.storage import CheckpointRow, DigestRow, SearchFilter, Tx, WorkingSetRow
from ctxkeep.text import match_key, utc_text
from ctxkeep.tokens import count_blocks, count_joined, count_tokens
from ctxkeep.tools.checkpoint import load_version, parse_state
from ctxkeep.tools.evidence import take_offloads
from ctxkeep.tools.journal import describe, to_action
from ctxkeep.tools.shared.messages import detect_format, parse, render_for_count
from ctxkeep.tools.redaction.stored import redacted
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.shared.search_terms import query_terms
from ctxkeep.tools.working_set.budget import allocate, check_control_fits, make_room, share_out
from ctxkeep.tools.working_set.delivered import with_delivered
from ctxkeep.tools.working_set.evidence_slot import EvidenceSlot, evidence_slot
from ctxkeep.tools.working_set.memory_slot import memory_slot
from ctxkeep.tools.working_set.recent import RecentSlot, RecentStart, check_format, message_json, recent_slot
from ctxkeep.tools.working_set.state_blocks import (
    Rendered,
    goal_block,
    history_block,
    next_action_block,
    policy_block,
    state_block,
    state_control_tokens,
)

STABLE: frozenset[Slot] = frozenset({"policy", "goal", "state", "memory", "history"})
ORDER: tuple[Slot, ...] = ("policy", "goal", "state", "memory", "history", "evidence", "recent", "next_action")
MAX_LISTED = 50
MAX_DROPPED = 30
RESOURCE_THRESHOLD = 0.75
SEPARATOR_TOKENS = 2  # the blank line that opens every block after the first (counted generously)


@dataclass
class _Parts:
    """Every slot's rendering while the working set is assembled."""

    blocks: dict[Slot, Rendered]
    evidence: EvidenceSlot
    recent: RecentSlot
    evidence_limit: int  # the evidence slot's size before any final trim: picks stay while it is unchanged
    memory_ids: list[str]


async def build_working_set(scope: Scope, req: WorkingSetRequest, record: bool = True) -> WorkingSetResult:
    """The working set of `req.task_id`; raises NotFound (no checkpoint) or InvalidInput (a budget too small for
    the control rules, recent messages in another format). `record=False` leaves the task's remembered selection
    (the base of the next diff and of stable picks) as it was."""
    if req.recent_messages and req.format != "markdown":
        check_format(req.recent_messages, req.format)
    await take_offloads(scope)  # outputs the hooks offloaded are evidence like any other
    async with scope.store.snapshot() as tx:
        row, _ = await load_version(tx, scope, req.task_id, None)
        digest = await tx.digests.get(scope.project, req.task_id)
        previous = await tx.working_sets.get(scope.project, req.task_id)
        state = parse_state(row)
        asked = redacted(req.focus)[0] if req.focus else None  # it is stored with the picks, and shown
        focus = asked if asked and query_terms(asked) else (state.next_action or state.goal)
        parts, allocation = await _assemble(tx, scope, req, row, digest, focus, previous)
    result = _result(req, row, focus, parts, allocation, previous, digest)
    if not record:
        return result
    async with scope.store.transaction() as tx:
        await tx.working_sets.put(
            scope.project,
            WorkingSetRow(
                req.task_id,
                _focus_key(req, focus),
                with_delivered(_selection(parts), result),
                json.dumps(_claims(parts)),
                json.dumps(parts.recent.start.__dict__ if parts.recent.start else None),
                utc_text(scope.clock()) or "",
                json.dumps(parts.memory_ids),
            ),
        )
    return result


def _focus_key(req: WorkingSetRequest, focus: str) -> str:
    """What the evidence selection depends on besides the slot size: the focus and the as_of time."""
    return match_key(focus) + (f"\n@{utc_text(req.as_of)}" if req.as_of else "")


def _sticky(previous: WorkingSetRow | None, focus: str, limit: int) -> list[tuple[str, int]]:
    """The previous picks, kept as they were while the focus and the evidence slot's size are unchanged
    (no re-ranking: a stable cache prefix)."""
    if previous is None or previous.focus_key != focus:
        return []
    selection = json.loads(previous.selection_json)
    return [(str(ref), int(chars)) for ref, chars in selection["picks"]] if selection["limit"] == limit else []


def _selection(parts: _Parts) -> str:
    return json.dumps({"limit": parts.evidence_limit, "picks": [[p.row.ref, p.chars] for p in parts.evidence.picks]})


def _cost(block: Rendered) -> int:
    """A block's tokens with the blank line that opens it (an empty block costs nothing)."""
    return block.tokens + SEPARATOR_TOKENS if block.tokens else 0


def _control_blocks(
    req: WorkingSetRequest, row: CheckpointRow, allocation: dict[Slot, int], caps: dict[Slot, int], intents: list[str]
) -> tuple[dict[Slot, Rendered], int]:
    """Policy, goal and next action (whole), after making room for every control rule (which raises, naming the
    budget that works, when it cannot); and the state's floor: its control sections, plus the exact facts while the
    budget has room for them."""
    state = parse_state(row)
    fixed: dict[Slot, Rendered] = {
        "policy": policy_block(req.policy, count_tokens),
        "goal": goal_block(req.task_id, state, count_tokens),
        "next_action": next_action_block(state, count_tokens),
    }
    control = state_control_tokens(row.version, state, count_tokens, intents) + SEPARATOR_TOKENS
    needs: dict[Slot, int] = {**{slot: _cost(r) for slot, r in fixed.items()}, "state": control}
    check_control_fits(req.budget_tokens, needs, caps)
    for slot, need in needs.items():
        make_room(allocation, caps, slot, need, req.budget_tokens, needs)
    protected = state_control_tokens(row.version, state, count_tokens, intents, keep_facts=True) + SEPARATOR_TOKENS
    try:
        make_room(allocation, caps, "state", protected, req.budget_tokens, needs)
        return fixed, protected
    except InvalidInput:  # no room for the facts: they may be cut, the control rules may not
        return fixed, control


async def _stable_slots(
    tx: Tx,
    scope: Scope,
    req: WorkingSetRequest,
    row: CheckpointRow,
    digest: DigestRow | None,
    focus: str,
    allocation: dict[Slot, int],
    caps: dict[Slot, int],
    intents: list[str],
    state_floor: int,
    blocks: dict[Slot, Rendered],
) -> list[str]:
    """State, memory and history into `blocks`, sharing what policy, goal, next action, evidence, recent and the
    reserve leave them: all they need when it fits, default shares as ceilings when it does not. Returns the memory ids.
    Independent of the recent messages, so the stable prefix does not move as they grow."""
    state = parse_state(row)
    room = (
        req.budget_tokens
        - sum(allocation[s] for s in ("evidence", "recent", "reserve"))
        - sum(_cost(blocks[s]) for s in ("policy", "goal", "next_action"))
    )
    room = max(room, state_floor)
    moment = utc_text(req.as_of or scope.clock()) or ""
    ceiling = {slot: caps.get(slot, room) for slot in ("state", "memory", "history")}
    memories = await memory_slot(
        tx, scope.project, focus, moment, max(0, min(room, ceiling["memory"]) - SEPARATOR_TOKENS), count_tokens
    )
    demands: dict[Slot, int] = {
        "state": min(_cost(state_block(row.version, state, 10**9, count_tokens, intents)), ceiling["state"]),
        "memory": min(_cost(memories.rendered), ceiling["memory"]),
        "history": min(_cost(history_block(digest, 10**9, count_tokens)), ceiling["history"]),
    }
    given = share_out(room, demands, {"state": state_floor})
    blocks["state"] = state_block(
        row.version, state, max(given["state"], state_floor) - SEPARATOR_TOKENS, count_tokens, intents
    )
    if given["memory"] < _cost(memories.rendered):
        memories = await memory_slot(
            tx, scope.project, focus, moment, max(0, given["memory"] - SEPARATOR_TOKENS), count_tokens
        )
    blocks["memory"] = memories.rendered
    blocks["history"] = history_block(digest, max(0, given["history"] - SEPARATOR_TOKENS), count_tokens)
    for slot in ("state", "memory", "history"):
        allocation[slot] = given[slot]
    return memories.memory_ids


async def _assemble(
    tx: Tx,
    scope: Scope,
    req: WorkingSetRequest,
    row: CheckpointRow,
    digest: DigestRow | None,
    focus: str,
    previous: WorkingSetRow | None,
) -> tuple[_Parts, dict[Slot, int]]:
    caps = dict(req.slot_budgets)
    allocation = allocate(req.budget_tokens, caps)
    intents = [describe(to_action(row)) for row in await tx.journal.open_for_task(scope.project, req.task_id)]
    blocks, state_floor = _control_blocks(req, row, allocation, caps, intents)
    memory_ids = await _stable_slots(tx, scope, req, row, digest, focus, allocation, caps, intents, state_floor, blocks)
    # what the stable slots leave flows to evidence (unless capped), what evidence leaves to recent
    used = sum(_cost(blocks[s]) for s in ("policy", "goal", "state", "memory", "history", "next_action"))
    pool = max(0, req.budget_tokens - allocation["evidence"] - allocation["recent"] - allocation["reserve"] - used)
    where = _filter(scope, req)
    evidence_limit = allocation["evidence"] - SEPARATOR_TOKENS + (pool if "evidence" not in caps else 0)
    sticky = _sticky(previous, _focus_key(req, focus), evidence_limit)
    evidence = await evidence_slot(tx, scope.project, focus, where, evidence_limit, count_tokens, sticky)
    pool = evidence_limit - evidence.tokens if "evidence" not in caps else pool
    recent_limit = allocation["recent"] - SEPARATOR_TOKENS + (max(0, pool) if "recent" not in caps else 0)
    previous_start = (
        RecentStart(**json.loads(previous.recent_json)) if previous and previous.recent_json != "null" else None
    )
    recent = recent_slot(req.recent_messages or [], req.format, recent_limit, count_tokens, previous_start)
    allocation["evidence"], allocation["recent"] = (
        evidence_limit + SEPARATOR_TOKENS,
        max(0, recent_limit) + SEPARATOR_TOKENS,
    )
    parts = _Parts(blocks, evidence, recent, evidence_limit, memory_ids)
    return await _within_budget(tx, scope, req, parts, digest, focus, where, sticky), allocation


async def _within_budget(
    tx: Tx,
    scope: Scope,
    req: WorkingSetRequest,
    parts: _Parts,
    digest: DigestRow | None,
    focus: str,
    where: SearchFilter,
    sticky: list[tuple[str, int]],
) -> _Parts:
    """The parts trimmed to the budget exactly (the blank lines between blocks can cost a few tokens more than the
    slots counted): evidence first, then history; InvalidInput if control rules and recent messages alone exceed it."""
    evidence = parts.evidence
    while _total(req, parts) > req.budget_tokens and evidence.picks:
        limit = max(0, evidence.tokens - (_total(req, parts) - req.budget_tokens) - 8)
        evidence = await evidence_slot(tx, scope.project, focus, where, limit, count_tokens, sticky)
        parts = _Parts(parts.blocks, evidence, parts.recent, parts.evidence_limit, parts.memory_ids)
    excess = _total(req, parts) - req.budget_tokens
    if excess > 0 and parts.blocks["history"].tokens:
        parts.blocks["history"] = history_block(
            digest, max(0, parts.blocks["history"].tokens - excess - 8), count_tokens
        )
    if _total(req, parts) > req.budget_tokens:
        raise InvalidInput(
            f"budget_tokens = {req.budget_tokens} cannot hold this task's control rules and the blank lines "
            f"between its blocks; send budget_tokens of at least {_total(req, parts)}"
        )
    return parts


def _filter(scope: Scope, req: WorkingSetRequest) -> SearchFilter:
    """Hard filters: this task's records and the project's shared ones, valid at as_of (default now)."""
    moment = utc_text(req.as_of or scope.clock())
    return SearchFilter(task_id=req.task_id, kind=None, tags=[], valid_at=moment, exclude_expired_at=None, shared=True)


def _own(parts: _Parts) -> list[tuple[Slot, str, int | None, int]]:
    """(slot, text, its tokens when known, items) of each non-empty slot, in output order."""
    out: list[tuple[Slot, str, int | None, int]] = []
    for slot in ORDER:
        tokens: int | None
        if slot == "evidence":
            text, tokens, items = parts.evidence.text, parts.evidence.tokens, len(parts.evidence.picks)
        elif slot == "recent":
            text, tokens, items = parts.recent.text, parts.recent.tokens, len(parts.recent.messages)
            if not text and parts.recent.messages:
                text, tokens = "\n".join(message_json(m) for m in parts.recent.messages), None
        else:
            text, tokens, items = parts.blocks[slot].text, parts.blocks[slot].tokens, parts.blocks[slot].items
        if text:
            out.append((slot, text, tokens, items))
    return out


def _texts(parts: _Parts) -> list[tuple[Slot, str, int]]:
    """(slot, text, items) of each non-empty slot, in output order."""
    # the blank line between blocks opens the next block, so appending to a block keeps the bytes before
    return [(slot, ("\n" if index else "") + text, items) for index, (slot, text, _, items) in enumerate(_own(parts))]


def _opened_tokens(index: int, text: str, tokens: int | None) -> int:
    """The tokens of a block as shown: its text, opened by a line break after the first block."""
    if tokens is None:
        return _count(("\n" if index else "") + text)
    return count_joined(["\n", text], [_count("\n"), tokens]) if index else tokens


def _markdown_tokens(own: list[tuple[Slot, str, int | None, int]]) -> int:
    """The tokens of the blocks joined as the markdown text joins them, from each block's own count."""
    return count_blocks([text for _, text, _, _ in own], [_count(text) if t is None else t for _, text, t, _ in own])


def _messages(req: WorkingSetRequest, parts: _Parts, breakpoint_slot: Slot | None) -> list[dict[str, Any]]:
    """The working set as provider messages: context blocks as text parts of one user message (the policy as a
    system message for OpenAI), then the recent messages as sent, then the next action."""
    context = [
        (slot, text.lstrip("\n"))
        for slot, text, _ in _texts(parts)
        if slot not in ("recent", "next_action", "policy" if req.format == "openai" else "")
    ]
    parts_out = []
    for slot, text in context:
        part: dict[str, Any] = {"type": "text", "text": text}
        if req.format == "anthropic" and slot == breakpoint_slot:
            part["cache_control"] = {"type": "ephemeral"}
        parts_out.append(part)
    messages: list[dict[str, Any]] = []
    if req.format == "openai" and parts.blocks["policy"].text:
        messages.append({"role": "system", "content": parts.blocks["policy"].text})
    if parts_out:
        messages.append({"role": "user", "content": parts_out})
    messages += parts.recent.messages
    if parts.blocks["next_action"].text:
        messages.append({"role": "user", "content": [{"type": "text", "text": parts.blocks["next_action"].text}]})
    return messages


def _total(req: WorkingSetRequest, parts: _Parts) -> int:
    """Tokens of the rendered output: the markdown text, or each message's role and content text."""
    if req.format == "markdown":
        return _markdown_tokens(_own(parts))
    recent = {id(m) for m in parts.recent.messages}
    return sum(_count(message_json(m) if id(m) in recent else render_for_count(m)) for m in _messages(req, parts, None))


@functools.lru_cache(maxsize=32)
def _count(text: str) -> int:
    """count_tokens for whole renderings, which are counted more than once while a working set is checked."""
    return count_tokens(text)


def _claims(parts: _Parts) -> list[str]:
    return sorted(
        {claim for slot in ("policy", "goal", "state", "memory", "next_action") for claim in parts.blocks[slot].claims}
    )


def _breakpoint(own: list[tuple[Slot, str, int | None, int]]) -> CacheBreakpoint | None:
    """The end of the leading run of stable blocks."""
    index, chars = -1, 0
    for i, (slot, text, _, _) in enumerate(own):
        if slot not in STABLE:
            break
        index, chars = i, chars + len(text) + (1 if i else 0)
    if index < 0:
        return None
    return CacheBreakpoint(block_index=index, char_offset=chars, token_offset=_markdown_tokens(own[: index + 1]))


def _diff(previous: WorkingSetRow | None, key: str, claims: list[str], refs: list[str]) -> WorkingSetDiff:
    if previous is None:
        return WorkingSetDiff(first=True)
    before_claims = set(json.loads(previous.claims_json))
    before_refs = [str(ref) for ref, _ in json.loads(previous.selection_json)["picks"]]
    before, now = set(before_refs), set(refs)
    lists = {
        "claims_added": sorted(set(claims) - before_claims),
        "claims_removed": sorted(before_claims - set(claims)),
        "evidence_added": [r for r in refs if r not in before],
        "evidence_removed": [r for r in before_refs if r not in now],
    }
    more = sum(max(0, len(items) - MAX_LISTED) for items in lists.values())
    return WorkingSetDiff(
        first=False,
        previous_built_at=previous.built_at,
        focus_changed=previous.focus_key != key,
        more=more,
        **{name: items[:MAX_LISTED] for name, items in lists.items()},
    )


def _advice(
    req: WorkingSetRequest, row: CheckpointRow, digest: DigestRow | None, parts: _Parts, allocation: dict[Slot, int]
) -> CompressAdvice:
    shown = parts.blocks["history"]
    history_needed = shown.tokens if not shown.dropped else history_block(digest, 10**9, count_tokens).tokens
    room = allocation["history"] + allocation["recent"]
    needed = history_needed + parts.recent.needed
    resource = room > 0 and needed > RESOURCE_THRESHOLD * room
    resource_reason = (
        f"history and recent messages need {needed} of their {room} tokens (over 75%): compress_history"
        if resource
        else None
    )
    boundary = None
    if req.recent_messages:
        from ctxkeep.tools.compression import semantic_boundary

        boundary = semantic_boundary(parse(req.recent_messages, detect_format(req.recent_messages)))
    semantic_reason = None
    if boundary is not None:
        semantic_reason = f"{boundary.kind.replace('_', ' ')} at recent message {boundary.message_index}: checkpoint_save, then compress_history"
    elif row.trigger == "semantic" and (digest is None or digest.updated_at < row.created_at):
        semantic_reason = "the latest checkpoint marks a semantic boundary and the history was not compressed since"
    reasons = [reason for reason in (resource_reason, semantic_reason) if reason]
    return CompressAdvice(
        resource=resource, semantic=semantic_reason is not None, reason="; ".join(reasons) or "no compression needed"
    )


def _result(
    req: WorkingSetRequest,
    row: CheckpointRow,
    focus: str,
    parts: _Parts,
    allocation: dict[Slot, int],
    previous: WorkingSetRow | None,
    digest: DigestRow | None,
) -> WorkingSetResult:
    own = _own(parts)
    texts = _texts(parts)
    cache = _breakpoint(own)
    blocks = [
        Block(
            slot=slot,
            tokens=_opened_tokens(index, own[index][1], own[index][2]),
            hash=hashlib.sha256(text.encode("utf-8")).hexdigest()[:16],
            stable=slot in STABLE,
            items=items,
        )
        for index, (slot, text, items) in enumerate(texts)
    ]
    refs = [pick.row.ref for pick in parts.evidence.picks]
    dropped = [d for slot in ORDER if slot not in ("evidence", "recent") for d in parts.blocks[slot].dropped]
    dropped += parts.recent.dropped + parts.evidence.dropped
    shown = [  # the reason only for the items listed (the order does not depend on it)
        d.model_copy(update={"why": _why(d, allocation, req.slot_budgets)}) for d in _ordered(dropped)[:MAX_DROPPED]
    ]
    messages = (
        _messages(req, parts, texts[cache.block_index][0] if cache else None) if req.format != "markdown" else None
    )
    return WorkingSetResult(
        task_id=req.task_id,
        version=row.version,
        focus=focus,
        format=req.format,
        text="".join(text for _, text, _ in texts) if req.format == "markdown" else None,
        messages=messages,
        blocks=blocks,
        tokens_total=_total(req, parts),
        budget_tokens=req.budget_tokens,
        slot_budgets=dict(allocation),
        cache_breakpoint=cache,
        evidence_refs=refs,
        memory_ids=parts.memory_ids,
        dropped=shown,
        dropped_more=max(0, len(dropped) - MAX_DROPPED),
        diff=_diff(previous, _focus_key(req, focus), _claims(parts), refs),
        compress_advice=_advice(req, row, digest, parts, allocation),
    )


_GET_BACK: dict[str, str] = {
    "state": "checkpoint_load shows the whole state",
    "evidence": "evidence_get(ref) returns it whole",
    "memory": "memory_search finds it",
    "history": "the digest is kept whole by compress_history",
    "recent": "older messages leave first; compress_history keeps them",
}


def _why(item: DroppedItem, allocation: dict[Slot, int], caps: dict[Slot, int]) -> str:
    """Why an item left: the tokens its slot had and what set them."""
    if item.reason == "truncated" and item.slot == "evidence":
        return f"shown as its best passage to fit; {_GET_BACK['evidence']}"
    limit = allocation.get(item.slot, 0)
    setter = (
        "its cap in slot_budgets"
        if item.slot in caps
        else "its part of a short budget (control rules, then exact facts, go first)"
    )
    verb = "cut short" if item.reason == "truncated" else "left out"
    return f"{verb}: the {item.slot} slot had {limit} tokens ({setter}); {_GET_BACK.get(item.slot, '')}".rstrip("; ")


def _ordered(dropped: list[DroppedItem]) -> list[DroppedItem]:
    """Cuts of control-adjacent slots first, then budget drops before truncations (what was lost before what was shortened)."""
    return sorted(dropped, key=lambda d: (d.reason != "budget", ORDER.index(d.slot) if d.slot in ORDER else len(ORDER)))
