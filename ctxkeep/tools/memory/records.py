"""Long-term memory: memory_write (provenance gate, lifetime, conflicts by key) and memory_search.

Each write is an immutable version of its key. Which version is current is decided when it is
read, so expiry needs no background job: among the versions in force (not expired, already
effective), the most authoritative kind wins (project_policy > user_preference > task_fact and
skill), then the newest. The others stay as history.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime, timedelta

from ctxkeep.errors import InvalidInput, NotFound, Refused
from ctxkeep.models.memory import (
    AUTHORITY,
    Memory,
    MemoryConflict,
    MemorySearchRequest,
    MemorySearchResult,
    MemorySource,
    MemoryWriteRequest,
    MemoryWriteResult,
)
from ctxkeep.storage import MemoryRow, Tx
from ctxkeep.text import match_key, one_line, utc_text, utc_moment
from ctxkeep.tools.evidence import load_row
from ctxkeep.tools.memory.status import current_by_key, in_force, status_of
from ctxkeep.tools.redaction.stored import redacted
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.shared.search_terms import memory_terms, query_terms

MAX_KEYS = 1_000  # keys looked at by one search or working set


def _missing(req: MemoryWriteRequest) -> list[str]:
    """What the kind's gate requires and the request lacks (empty: the write may proceed)."""
    missing: list[str] = []
    if req.kind == "user_preference":
        if not req.explicit_confirmation:
            missing.append(
                "explicit_confirmation: true (the user said or confirmed it; a preference you inferred is speculation)"
            )
        if not req.source_message_id:
            missing.append("source_message_id (the id of the user's message that says it)")
    elif req.kind == "task_fact":
        if not req.evidence_ref and req.source_version is None:
            missing.append(
                "a receipt: evidence_ref (evidence_put the tool output first) or task_id + source_version "
                "(the checkpoint version that records it)"
            )
        if req.source_version is not None and not req.task_id:
            missing.append("task_id, the task whose checkpoint source_version is")
    elif req.kind == "project_policy":
        if req.review_status != "approved":
            missing.append(
                f"review_status: 'approved' (it is {req.review_status or 'not given'}; write a policy once it is approved)"
            )
        if req.effective_at is None:
            missing.append("effective_at (when the policy takes effect)")
        if not req.owner:
            missing.append("owner (who owns the policy)")
    elif req.kind == "skill" and not req.task_id:
        missing.append("task_id (the task the skill was learned from)")
    return missing


def check_gate(req: MemoryWriteRequest) -> None:
    """Raise Refused, naming every missing requirement, unless the request passes its kind's provenance gate."""
    keep_instead = (
        "keep it in the task state's assumptions or open_questions; write a task_fact once a receipt confirms "
        "it, or a user_preference once the user confirms it"
    )
    if req.kind == "speculation":
        raise Refused(
            f"memory_write refused: speculation is never stored as memory (a guess would come back as a fact); {keep_instead}"
        )
    if req.confidence < 0.5:
        raise Refused(
            f"memory_write refused: confidence {req.confidence} is below 0.5, which is speculation; {keep_instead}"
        )
    missing = _missing(req)
    if missing:
        raise Refused(f"memory_write refused: a {req.kind} needs " + "; ".join(missing))


@dataclass(frozen=True)
class Receipt:
    ref: str
    expires_at: str | None


async def _check_source_version(tx: Tx, scope: Scope, task_id: str, version: int | None) -> None:
    """The checkpoint a write names as its source must be stored here (a version, or the task at all)."""
    if await tx.checkpoints.get(scope.project, task_id, version):
        return
    latest = await tx.checkpoints.latest_version(scope.project, task_id)
    if latest == 0:
        detail = (
            f"no task {task_id!r} in this project ({scope.project}); call checkpoint_list to see the tasks "
            "here, or checkpoint_save to start this one"
        )
    else:
        detail = f"task {task_id!r} has versions 1 to {latest}; send a version in that range, or none for the latest"
    raise Refused(f"memory_write refused: its source is not stored: {detail}")


async def _check_receipts(tx: Tx, scope: Scope, req: MemoryWriteRequest, now: str) -> Receipt | None:
    """The receipts a write names must exist here and be in force; returns the evidence receipt (its full ref: a
    unique prefix is accepted)."""
    if req.task_id and (req.source_version is not None or req.kind == "skill"):
        await _check_source_version(tx, scope, req.task_id, req.source_version)
    if not req.evidence_ref:
        return None
    try:
        row = await load_row(tx, scope, req.evidence_ref, prefix_ok=True)
    except NotFound as exc:
        raise Refused(
            f"memory_write refused: evidence_ref {req.evidence_ref!r} is not stored in this project; "
            "evidence_put the receipt first and send the ref it returns"
        ) from exc
    if row.expires_at is not None and row.expires_at <= now:
        raise Refused(
            f"memory_write refused: the receipt {row.ref} expired at {row.expires_at[:19]}Z; fetch the source "
            "again, evidence_put the new copy and send its ref"
        )
    return Receipt(row.ref, row.expires_at)


def key_digest(key_match: str) -> str:
    """How a tombstone names a forgotten key without keeping it readable."""
    return hashlib.sha256(key_match.encode("utf-8")).hexdigest()


def to_memory(row: MemoryRow, now: datetime, current: dict[str, MemoryRow]) -> Memory:
    created = utc_moment(row.created_at)
    return Memory(
        memory_id=row.memory_id,
        key=row.key,
        kind=row.kind,  # type: ignore[arg-type]
        content=row.content,
        confidence=row.confidence,
        source=MemorySource.model_validate_json(row.source_json),
        version=row.version,
        created_at=created,
        effective_at=utc_moment(row.effective_at) if row.effective_at else None,
        expires_at=utc_moment(row.expires_at) if row.expires_at else None,
        status=status_of(row, utc_text(now) or "", current),
        age_seconds=max(0, int((now - created).total_seconds())),
        forget=f"memory_forget(memory_id={row.memory_id!r})",
    )


def _expiry(scope: Scope, req: MemoryWriteRequest, now: datetime, receipt: Receipt | None) -> str | None:
    """When the memory stops being in force: as sent, else the kind's lifetime counted from when it takes effect,
    never after the receipt it rests on. Raises InvalidInput for a time in the past or before effective_at."""
    start = max(now, req.effective_at) if req.effective_at else now
    if req.expires_at is not None:
        if req.expires_at <= start:
            raise InvalidInput(
                f"expires_at {req.expires_at.isoformat()} is not after {'effective_at' if start != now else 'now'} "
                f"({start.isoformat()}); send a later time, or none for the kind's default lifetime"
            )
        return utc_text(req.expires_at)
    days = scope.memory_ttl_days.get(req.kind)
    try:
        default = utc_text(start + timedelta(days=days)) if days else None
    except OverflowError:
        since = f"effective_at {start.date().isoformat()}" if start != now else "now"
        raise InvalidInput(
            f"the {req.kind} lifetime ({days} days) from {since} ends after the year 9999; send an earlier "
            "effective_at, or an expires_at within the year 9999"
        ) from None
    if receipt is not None and receipt.expires_at is not None:
        return min(default, receipt.expires_at) if default else receipt.expires_at
    return default


def _source(req: MemoryWriteRequest, evidence_ref: str | None) -> MemorySource:
    return MemorySource(
        explicit_confirmation=req.explicit_confirmation,
        source_message_id=req.source_message_id,
        evidence_ref=evidence_ref,
        task_id=req.task_id,
        source_version=req.source_version,
        review_status=req.review_status,
        owner=req.owner,
    )


def _same_write(
    rows: list[MemoryRow], req: MemoryWriteRequest, content: str, source_json: str, now: str
) -> MemoryRow | None:
    """A version not yet expired with exactly this kind, content, source, confidence and dates: a retry, stored once.
    (A new source is a re-confirmation; a corrected date or confidence is a new version.)"""
    for row in rows:
        same = (row.kind, row.content, row.source_json, row.confidence, row.effective_at) == (
            req.kind,
            content,
            source_json,
            req.confidence,
            utc_text(req.effective_at),
        )
        if (
            same
            and (req.expires_at is None or row.expires_at == utc_text(req.expires_at))
            and (row.expires_at or "~") > now
        ):
            return row
    return None


def _conflict(before: MemoryRow | None, written: MemoryRow, after: MemoryRow | None, now: str) -> MemoryConflict | None:
    if before is None or before.id == written.id or match_key(before.content) == match_key(written.content):
        return None
    if not in_force(written, now):
        when = (
            f"takes effect {written.effective_at[:10]}"
            if written.effective_at and written.effective_at > now
            else "has already expired"
        )
        reason = f"{written.memory_id} {when}: {before.memory_id} stays current until then"
    elif after is not None and after.id == written.id:
        rule = (
            f"{written.kind} outranks {before.kind}"
            if AUTHORITY[written.kind] > AUTHORITY[before.kind]
            else "the newer memory of equal authority wins"
        )
        reason = f"{rule}: {written.memory_id} is current; {before.memory_id} is kept as history"
    else:
        reason = (
            f"{before.kind} outranks {written.kind}: {before.memory_id} stays current; {written.memory_id} is kept as "
            "history and becomes current only if the other expires or is forgotten"
        )
    current = after.memory_id if after is not None else written.memory_id
    return MemoryConflict(
        key=written.key, previous=before.memory_id, written=written.memory_id, current=current, reason=reason
    )


WRITE_ATTEMPTS = 3  # writes that lost the key's next version to another write try again this often, then hold it


@dataclass(frozen=True)
class _Written:
    """What a write found and left: the key's versions (the new one appended), the current one before it, and the
    version stored or found identical."""

    versions: list[MemoryRow]
    before: MemoryRow | None
    row: MemoryRow
    deduplicated: bool


async def memory_write(scope: Scope, req: MemoryWriteRequest) -> MemoryWriteResult:
    """Store a memory that passes its kind's provenance gate, as the next version of its key.

    Raises Refused (gate, receipts not stored; nothing written) or InvalidInput (expires_at in the past).
    A write that contradicts the key's current memory is stored as well and reported as a conflict.

    The key's versions are read and the new one decided outside any transaction; the write is one conditional
    insert (`memories.insert_next`: when that version is still the key's next), so writes of other keys never wait
    and the key is held only while the store writes. After WRITE_ATTEMPTS lost races it is decided holding the key.
    """
    check_gate(req)
    now = scope.clock()
    now_text = utc_text(now) or ""
    req, redactions = redacted(req, "the memory")
    key, content = req.key, req.content
    key_match = match_key(key)
    async with scope.store.snapshot() as tx:
        receipt = await _check_receipts(tx, scope, req, now_text)
    source_json = _source(req, receipt.ref if receipt else None).model_dump_json()
    new = _NewMemory(scope, req, key, key_match, content, source_json, _expiry(scope, req, now, receipt), now_text)
    written = None
    for _ in range(WRITE_ATTEMPTS):
        async with scope.store.snapshot() as tx:
            versions = await tx.memories.versions(scope.project, [key_match])
            version = await tx.memories.next_version(scope.project, key_match, key_digest(key_match))
        written = await _write(scope, new, versions, version, holding=False)
        if written is not None:
            break
    if written is None:
        async with scope.store.transaction() as tx:
            await tx.memories.lock(scope.project, key_match)
            versions = await tx.memories.versions(scope.project, [key_match])
            version = await tx.memories.next_version(scope.project, key_match, key_digest(key_match))
            written = await _write(scope, new, versions, version, holding=True, tx=tx)
    assert written is not None
    current = current_by_key(written.versions, now_text)
    after = current.get(key_match)
    return MemoryWriteResult(
        memory=to_memory(written.row, now, current),
        deduplicated=written.deduplicated,
        redactions=redactions,
        current=to_memory(after, now, current) if after else None,
        conflict=None if written.deduplicated else _conflict(written.before, written.row, after, now_text),
    )


@dataclass(frozen=True)
class _NewMemory:
    """A write's memory, before its version is known."""

    scope: Scope
    req: MemoryWriteRequest
    key: str
    key_match: str
    content: str
    source_json: str
    expires_at: str | None
    now_text: str

    def row(self, version: int) -> MemoryRow:
        material = "\n".join(
            [self.scope.project, self.key_match, str(version), self.req.kind, self.content, self.now_text]
        )
        return MemoryRow(
            0,
            "mem_" + hashlib.sha256(material.encode("utf-8")).hexdigest()[:16],
            self.key,
            self.key_match,
            self.req.kind,
            self.content,
            self.req.confidence,
            self.source_json,
            version,
            self.now_text,
            utc_text(self.req.effective_at),
            self.expires_at,
        )


async def _write(
    scope: Scope, new: _NewMemory, versions: list[MemoryRow], version: int, holding: bool, tx: Tx | None = None
) -> _Written | None:
    """Store the memory as version `version` of its key unless an identical one is stored (a retry); None when
    another write took that version first (only when not `holding` the key, in `tx`)."""
    before = current_by_key(versions, new.now_text).get(new.key_match)
    same = _same_write(versions, new.req, new.content, new.source_json, new.now_text)
    if same is not None:
        return _Written(versions, before, same, deduplicated=True)
    terms = memory_terms(new.key, new.content)
    if holding:
        assert tx is not None
        stored: MemoryRow | None = await tx.memories.insert(scope.project, new.row(version), terms)
    else:
        async with scope.store.transaction() as own:
            stored = await own.memories.insert_next(scope.project, new.row(version), terms, key_digest(new.key_match))
    if stored is None:
        return None
    return _Written([*versions, stored], before, stored, deduplicated=False)


async def _candidate_keys(tx: Tx, scope: Scope, req: MemorySearchRequest) -> tuple[list[str], dict[str, float]]:
    if req.key is not None:
        return [match_key(redacted(req.key)[0])], {}  # as memory_write stored it
    if req.query is not None:
        terms = query_terms(req.query)
        if not terms:
            raise InvalidInput(
                f"query {req.query!r} has no searchable words (only stopwords or punctuation); send content "
                "words, or no query to list the newest memories"
            )
        scored = await tx.memories.matching(scope.project, terms, MAX_KEYS)
        return [key for key, _ in scored], dict(scored)
    return await tx.memories.keys(scope.project, req.kind, MAX_KEYS), {}


async def memory_search(scope: Scope, req: MemorySearchRequest) -> MemorySearchResult:
    """Memories matching the query and filters: only current ones unless include_history, best match (or newest) first."""
    now = req.as_of or scope.clock()
    now_text = utc_text(now) or ""
    async with scope.store.snapshot() as tx:
        keys, scores = await _candidate_keys(tx, scope, req)
        rows = await tx.memories.versions(scope.project, keys)
    rows = [row for row in rows if row.created_at <= now_text]  # as of a past moment, later writes did not exist yet
    current = current_by_key(rows, now_text)
    matching = [row for row in rows if req.kind is None or row.kind == req.kind]
    shown = [row for row in matching if req.include_history or current.get(row.key_match) is row]
    rank = {key: i for i, key in enumerate(keys)}
    shown.sort(key=lambda r: (-scores.get(r.key_match, 0.0), rank[r.key_match], -r.version))
    return MemorySearchResult(
        memories=[to_memory(row, now, current) for row in shown[: req.limit]],
        not_shown=len(matching) - len(shown) + max(0, len(shown) - req.limit),
    )


def source_label(memory: MemoryRow) -> str:
    """Where a memory comes from and when, in a few words (for working sets)."""
    source = MemorySource.model_validate_json(memory.source_json)
    written = memory.created_at[:10]
    if memory.kind == "project_policy":
        label = f"owner {source.owner}, effective {(memory.effective_at or written)[:10]}"
    elif memory.kind == "user_preference":
        label = f"user message {source.source_message_id}, {written}"
    elif memory.kind == "skill":
        label = f"learned in task {source.task_id}, {written}"
    else:
        label = (
            f"receipt {source.evidence_ref}"
            if source.evidence_ref
            else f"task {source.task_id} v{source.source_version}"
        )
        label += f", {written}"
    return label + (f", expires {memory.expires_at[:10]}" if memory.expires_at else "")


def claim_prefix(row: MemoryRow) -> str:
    """How a working set's claims (kept for its diff) name a memory; forget removes the claims that start with it."""
    return f"memory: {one_line(row.key)}: "
