"""Versioned task checkpoints: save (verified, optimistic concurrency), load, list, diff.

Each version is an immutable row whose hash covers its parent's hash, the task id, the
version number and the canonical state JSON, so the chain can be checked end to end.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections import OrderedDict
from dataclasses import dataclass

from ctxkeep.errors import (
    CheckpointRefused,
    DatabaseUnavailable,
    InvalidInput,
    NotFound,
    SchemaTooNew,
    VersionConflict,
)
from ctxkeep.models import (
    STATE_SCHEMA_VERSION,
    CheckpointDiffResult,
    CheckpointListResult,
    CheckpointLoadResult,
    CheckpointSaveRequest,
    CheckpointSaveResult,
    TaskState,
    TaskSummary,
    Verification,
    VerifyRequest,
    VerifyResult,
    Violation,
)
from ctxkeep.storage import CheckpointRow, LeaseRow, Tx
from ctxkeep.tools.checkpoint import leases
from ctxkeep.tools.checkpoint.brief import render_brief
from ctxkeep.tools.checkpoint.diff import diff_states
from ctxkeep.tools.checkpoint.resume import resume_checks, resume_records
from ctxkeep.tools.checkpoint.verify import check_new_state, verify_states, verify_summary
from ctxkeep.tools.redaction.stored import redacted
from ctxkeep.tools.scope import Scope
from ctxkeep.text import utc_moment


def chain_hash(
    parent_hash: str | None,
    task_id: str,
    version: int,
    state_json: str,
    author: str | None = None,
    owner: str | None = None,
    took_over: str | None = None,
) -> str:
    """The hash a version must carry: sha256 over parent hash, task id, version and state JSON, then (only when any is
    set, so earlier versions keep their hashes) who saved it, under whose lease, and the lease it took over."""
    material = f"{parent_hash or ''}\n{task_id}\n{version}\n{state_json}"
    if author is not None or owner is not None or took_over is not None:
        material += "\n" + json.dumps([author, owner, took_over], ensure_ascii=False)
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def row_hash(row: CheckpointRow) -> str:
    """The hash a stored version must carry (verify_chain and bundle imports check it)."""
    return chain_hash(row.parent_hash, row.task_id, row.version, row.state_json, row.author, row.owner, row.took_over)


def _violations(row: CheckpointRow) -> list[Violation]:
    return [Violation.model_validate(v) for v in json.loads(row.violations_json)]


def _save_result(row: CheckpointRow, violations: list[Violation]) -> CheckpointSaveResult:
    return CheckpointSaveResult(
        task_id=row.task_id,
        version=row.version,
        hash=row.hash,
        parent_hash=row.parent_hash,
        created_at=utc_moment(row.created_at),
        trigger=row.trigger,  # type: ignore[arg-type]
        verification=Verification(ok=not violations, violations=violations),
    )


def _is_retry(req: CheckpointSaveRequest, current: int, previous: CheckpointRow | None, state_json: str) -> bool:
    """An identical state sent again (also as a retry whose first answer was lost) is not stored twice."""
    if previous is None or previous.state_json != state_json:
        return False
    return req.expected_version is None or req.expected_version in (current, current - 1)


@dataclass(frozen=True)
class _Head:
    """What a save is decided on: the task's latest version (None and 0 for a new task) and its lease."""

    previous: CheckpointRow | None
    current: int
    lease: LeaseRow | None


@dataclass(frozen=True)
class _Plan:
    """A decided save: the version to append (None: the state is the latest already), its verification, and the
    owner's claim on the lease (None without an owner)."""

    row: CheckpointRow | None
    violations: list[Violation]
    claim: leases.Claim | None

    @property
    def took_over(self) -> str | None:
        return self.claim.took_over if self.claim is not None else None


async def _head(tx: Tx, scope: Scope, task_id: str) -> _Head:
    found = await tx.checkpoints.get(scope.project, task_id)
    lease = await tx.leases.get(scope.project, task_id)
    return _Head(found[0], found[1], lease) if found else _Head(None, 0, lease)


def _plan(scope: Scope, req: CheckpointSaveRequest, head: _Head, state_json: str) -> _Plan:
    """Verify the save against `head` (pure Python, no database): the version to append, or none for a retry.
    Raises VersionConflict, CheckpointRefused, LeaseHeld."""
    now = scope.clock()
    claim = None
    if req.owner is not None:
        leases.check_owner(scope, req.owner)
        claim = leases.planned(head.lease, req.task_id, req.owner, req.lease_seconds, now)
    else:
        leases.check(head.lease, req.task_id, None, now)
    took_over = claim.took_over if claim is not None else None
    if took_over is None and _is_retry(req, head.current, head.previous, state_json):
        assert head.previous is not None
        return _Plan(None, _violations(head.previous), claim)
    if req.expected_version is not None and req.expected_version != head.current:
        raise VersionConflict(req.task_id, req.expected_version, head.current)
    if head.previous is None:
        violations = check_new_state(req.state)
    else:
        violations = verify_states(_as_saved_now(head.previous), req.state, req.goal_change_reason)
    if violations and req.strict:
        raise CheckpointRefused(violations)
    row = new_version(
        scope,
        req.task_id,
        head.previous,
        head.current,
        state_json,
        req.trigger,
        req.owner,
        took_over,
        goal_change_reason=req.goal_change_reason,
        violations_json=json.dumps([v.model_dump() for v in violations], ensure_ascii=False),
    )
    return _Plan(row, violations, claim)


OUTSIDE_ATTEMPTS = 3  # saves that lost the race verify again outside the lock this often, then while holding it


async def checkpoint_save(scope: Scope, req: CheckpointSaveRequest) -> CheckpointSaveResult:
    """Store `req.state` as the task's next version after verifying it against the latest one.

    Every text field of the state (and the goal change reason) is redacted first, so what is
    verified, hashed and stored is what a later load reads. Raises VersionConflict when
    `expected_version` is not current, CheckpointRefused when a strict save breaks a rule (nothing
    stored), LeaseHeld under another owner's live lease, InvalidInput when the redacted state is
    not a valid one. A state identical to the latest returns the latest version unchanged.

    The verification runs on a snapshot, outside any transaction; the write is one conditional
    append (`checkpoints.append`: holding the task, when it is where the snapshot saw it), so
    writes of other tasks never wait for it and the task is held only while the store writes.
    When another write of the same task came first, the save is verified again against the new
    head; after OUTSIDE_ATTEMPTS such races it is verified while holding the task, so it cannot
    lose again.
    """
    refusal = scope.store.read_only()
    if refusal is not None:  # before the verification: no save can be stored here, however it verifies
        raise DatabaseUnavailable(refusal)
    state, _ = redacted(req.state, "the state")
    reason, _ = redacted(req.goal_change_reason)
    req = req.model_copy(update={"state": state, "goal_change_reason": reason})
    state_json = req.state.canonical()
    for _ in range(OUTSIDE_ATTEMPTS):
        async with scope.store.snapshot() as tx:
            head = await _head(tx, scope, req.task_id)
        plan = _plan(scope, req, head, state_json)
        if plan.row is None and plan.claim is None:
            return _saved(head, plan, req)  # the state is the latest already, and no lease to renew
        if await _append_as_planned(scope, req, head, plan):
            return _saved(head, plan, req)
    head, plan = await _append_holding(scope, req, state_json)
    return _saved(head, plan, req)


def _saved(head: _Head, plan: _Plan, req: CheckpointSaveRequest) -> CheckpointSaveResult:
    if plan.row is None:
        assert head.previous is not None
        return _save_result(head.previous, plan.violations)  # the state is the latest already
    saved = _remember(plan.row.hash, req.state.model_copy(deep=True))  # the next save verifies against it
    _cache(_saved_now, plan.row.hash, saved)  # as a save stores it now: it was redacted above
    return _save_result(plan.row, plan.violations)


async def _append_as_planned(scope: Scope, req: CheckpointSaveRequest, head: _Head, plan: _Plan) -> bool:
    """The planned version (and the owner's lease) written when the task is still at `head`; False otherwise."""
    claim = plan.claim
    release = (
        req.owner
        if claim is not None and claim.lease is None and head.lease is not None and head.lease.owner == req.owner
        else None
    )
    async with scope.store.transaction() as tx:
        return await tx.checkpoints.append(
            scope.project,
            req.task_id,
            head.current,
            head.lease,
            claim.lease if claim is not None else None,
            release,
            plan.row,
        )


async def _append_holding(scope: Scope, req: CheckpointSaveRequest, state_json: str) -> tuple[_Head, _Plan]:
    """The save verified and written while holding the task (after it lost the race OUTSIDE_ATTEMPTS times)."""
    async with scope.store.transaction() as tx:
        await tx.checkpoints.lock(scope.project, req.task_id)
        head = await _head(tx, scope, req.task_id)
        plan = _plan(scope, req, head, state_json)
        if req.owner is not None and plan.claim is not None:
            await leases.write(tx, scope, req.task_id, req.owner, head.lease, plan.claim)
        if plan.row is not None:
            await tx.checkpoints.insert(scope.project, plan.row)
    return head, plan


def new_version(
    scope: Scope,
    task_id: str,
    previous: CheckpointRow | None,
    current: int,
    state_json: str,
    trigger: str,
    owner: str | None,
    took_over: str | None,
    goal_change_reason: str | None = None,
    violations_json: str = "[]",
) -> CheckpointRow:
    """The next version of a task, chained to `previous` and signed with who saved it."""
    parent_hash = previous.hash if previous else None
    version = current + 1
    return CheckpointRow(
        task_id=task_id,
        version=version,
        parent_hash=parent_hash,
        state_json=state_json,
        state_schema=STATE_SCHEMA_VERSION,
        hash=chain_hash(parent_hash, task_id, version, state_json, scope.user, owner, took_over),
        trigger=trigger,
        goal_change_reason=goal_change_reason,
        violations_json=violations_json,
        created_at=scope.clock().isoformat(),
        author=scope.user,
        owner=owner,
        took_over=took_over,
    )


async def claim_at_load(scope: Scope, task_id: str, owner: str, seconds: int | None) -> None:
    """checkpoint_load's claim: take, renew or release the lease; taking over another's expired lease appends a
    `takeover` version of the unchanged state (the chain records it). Raises LeaseHeld, NotFound."""
    async with scope.store.transaction() as tx:
        await tx.checkpoints.lock(scope.project, task_id)
        previous, current = await load_version(tx, scope, task_id, None)
        claimed = await leases.claim(tx, scope, task_id, owner, seconds, doing="claim")
        if claimed.took_over is not None:
            await tx.checkpoints.insert(
                scope.project,
                new_version(
                    scope, task_id, previous, current, previous.state_json, "takeover", owner, claimed.took_over
                ),
            )


async def load_version(tx: Tx, scope: Scope, task_id: str, version: int | None) -> tuple[CheckpointRow, int]:
    found = await tx.checkpoints.get(scope.project, task_id, version)
    if found:
        return found
    latest = await tx.checkpoints.latest_version(scope.project, task_id)
    if latest == 0:
        raise NotFound(
            f"no task {task_id!r} in this project ({scope.project}); call checkpoint_list to see the tasks "
            "here, or checkpoint_save to start this one"
        )
    raise NotFound(f"task {task_id!r} has versions 1 to {latest}; send a version in that range, or none for the latest")


_parsed: OrderedDict[str, TaskState] = OrderedDict()


_saved_now: OrderedDict[str, TaskState] = OrderedDict()


def _cache(cache: OrderedDict[str, TaskState], hash_: str, state: TaskState) -> TaskState:
    cache[hash_] = state
    while len(cache) > 256:
        cache.popitem(last=False)
    return state


def _remember(hash_: str, state: TaskState) -> TaskState:
    return _cache(_parsed, hash_, state)


def _as_saved_now(row: CheckpointRow) -> TaskState:
    """A stored version's state as a save stores it now, redacted (a version saved before every field was redacted
    holds its secrets in clear, and the same state saved again must not read as changed). Cached by hash."""
    state = _saved_now.get(row.hash)
    return state if state is not None else _cache(_saved_now, row.hash, redacted(parse_state(row))[0])


def parse_state(row: CheckpointRow) -> TaskState:
    """A stored version's state, parsed once per process: versions are immutable, keyed by hash. Do not mutate it."""
    state = _parsed.get(row.hash)
    return state if state is not None else _remember(row.hash, TaskState.model_validate_json(row.state_json))


async def checkpoint_load(
    scope: Scope, task_id: str, version: int | None = None, owner: str | None = None, lease_seconds: int | None = None
) -> CheckpointLoadResult:
    """A version of a task (the latest by default) with its resume brief and checks; with `owner`, the task's lease is
    claimed first (renewed, taken over once expired, released with 0 seconds). Raises NotFound, LeaseHeld."""
    if owner is not None:
        await claim_at_load(scope, task_id, owner, lease_seconds)
    async with scope.store.snapshot() as tx:
        row, latest = await load_version(tx, scope, task_id, version)
        if row.state_schema > STATE_SCHEMA_VERSION:
            raise SchemaTooNew(
                f"task {task_id!r} v{row.version} was saved by a newer ctxkeep; upgrade ctxkeep to load it"
            )
        state = parse_state(row)
        records = await resume_records(tx, scope, task_id, state)
    checks = resume_checks(scope, row, latest, state, records, owner)
    return CheckpointLoadResult(
        task_id=task_id,
        version=row.version,
        hash=row.hash,
        parent_hash=row.parent_hash,
        created_at=checks.saved_at,
        trigger=row.trigger,  # type: ignore[arg-type]
        author=row.author,
        owner=row.owner,
        took_over=row.took_over,
        state=state,
        brief=render_brief(task_id, row.version, state, checks),
        resume_checks=checks,
    )


def _short(text: str | None, limit: int = 300) -> str | None:
    return text if text is None or len(text) <= limit else text[:limit] + "…"


def _cursor(updated_at: str, task_id: str) -> str:
    """Where a page ended, as an opaque URL-safe token."""
    return (
        base64.urlsafe_b64encode(json.dumps([updated_at, task_id], ensure_ascii=False).encode("utf-8"))
        .decode("ascii")
        .rstrip("=")
    )


def _after(cursor: str) -> tuple[str, str]:
    """The (updated_at, task_id) a cursor names; raises InvalidInput for a token checkpoint_list did not return."""
    try:
        decoded = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8"))
        if isinstance(decoded, list) and len(decoded) == 2 and all(isinstance(part, str) for part in decoded):
            return decoded[0], decoded[1]
    except (ValueError, binascii.Error, UnicodeDecodeError):
        pass
    raise InvalidInput(
        f"cursor {cursor[:40]!r} is not one checkpoint_list returned; send the next_cursor of the previous page, "
        "or no cursor for the first page"
    )


async def checkpoint_list(scope: Scope, limit: int = 50, cursor: str | None = None) -> CheckpointListResult:
    """The project's tasks, most recently saved first, a page of `limit` at a time: `next_cursor` (None on the last
    page) fetches the next. A task saved while you page moves to the front: start again to see it there."""
    async with scope.store.snapshot() as tx:
        rows = await tx.checkpoints.tasks(scope.project, limit + 1, _after(cursor) if cursor else None)
    more, rows = len(rows) > limit, rows[:limit]
    tasks = []
    for row in rows:
        state = json.loads(row.state_json)
        tasks.append(
            TaskSummary(
                task_id=row.task_id,
                latest_version=row.latest_version,
                updated_at=utc_moment(row.updated_at),
                goal=_short(state["goal"]) or "",
                phase=_short(state.get("phase")),
                pending=len(state.get("pending", [])),
                pending_approvals=sum(1 for a in state.get("approvals", []) if a.get("status") == "pending"),
            )
        )
    return CheckpointListResult(
        tasks=tasks, next_cursor=_cursor(rows[-1].updated_at, rows[-1].task_id) if more else None
    )


async def load_pair(
    scope: Scope, task_id: str, from_version: int, to_version: int
) -> tuple[TaskState, TaskState, str | None]:
    """Two versions' states and the later one's goal_change_reason; raises NotFound."""
    async with scope.store.snapshot() as tx:
        old, _ = await load_version(tx, scope, task_id, from_version)
        new, _ = await load_version(tx, scope, task_id, to_version)
    return parse_state(old), parse_state(new), new.goal_change_reason


async def checkpoint_diff(scope: Scope, task_id: str, from_version: int, to_version: int) -> CheckpointDiffResult:
    """What changed between two versions of a task; raises NotFound."""
    before, after, _ = await load_pair(scope, task_id, from_version, to_version)
    return CheckpointDiffResult(
        task_id=task_id, from_version=from_version, to_version=to_version, changes=diff_states(before, after)
    )


async def verify_chain(scope: Scope, task_id: str) -> list[str]:
    """Problems in a task's hash chain (empty when every version verifies)."""
    async with scope.store.snapshot() as tx:
        rows = await tx.checkpoints.chain(scope.project, task_id)
    problems, parent = [], None
    for expected_version, row in enumerate(rows, start=1):
        if row.version != expected_version:
            problems.append(f"version {expected_version} is missing")
        if row.parent_hash != parent or row.hash != row_hash(row):
            problems.append(f"version {row.version} does not match its hash chain")
        parent = row.hash
    return problems


async def verify_checkpoint(scope: Scope, req: VerifyRequest) -> VerifyResult:
    """The violations between two stored versions or two given states (nothing is stored)."""
    if req.state is not None and req.summary is not None:
        violations = verify_summary(req.state, req.summary)
    elif req.before is not None and req.after is not None:
        violations = verify_states(req.before, req.after, req.goal_change_reason)
    else:
        assert req.task_id and req.from_version and req.to_version
        violations = await _verify_range(scope, req.task_id, req.from_version, req.to_version)
    return VerifyResult(ok=not violations, violations=violations)


async def _verify_range(scope: Scope, task_id: str, first: int, last: int) -> list[Violation]:
    """Each step first→first+1→…→last checked with what that step declared (its dropped items, its reason)."""
    if first > last:
        raise InvalidInput(f"from_version ({first}) is after to_version ({last}); send the older version first")
    async with scope.store.snapshot() as tx:
        await load_version(tx, scope, task_id, first)
        await load_version(tx, scope, task_id, last)
        rows = await tx.checkpoints.chain(scope.project, task_id, first, last)
    found: dict[tuple[str, str], Violation] = {}
    for older, newer in zip(rows, rows[1:], strict=False):
        for violation in verify_states(parse_state(older), parse_state(newer), newer.goal_change_reason):
            found.setdefault((violation.rule, violation.item), violation)
    return list(found.values())


async def latest_state(scope: Scope, task_id: str) -> TaskState | None:
    """The task's latest checkpointed state, or None when the task has no checkpoint."""
    async with scope.store.snapshot() as tx:
        found = await tx.checkpoints.get(scope.project, task_id)
    return parse_state(found[0]) if found else None
