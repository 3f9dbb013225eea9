"""memory_forget: a memory removed with everything derived from it, leaving only a tombstone.

Removed in one transaction: the memory versions, their index entries (the index is merged so
no old segment keeps them), the cached working sets that showed them, and the quotes of their
text in history digests and summaries. Then the index is merged and the write-ahead log is
checkpointed and truncated; with secure_delete on, the freed bytes are zeroed, so the text is gone
from the file itself. When a reader of another process keeps the WAL from being truncated
(`wal_cleared: false`), the truncation stays owed in the file and is finished at the next chance:
the store's next write, a second forget of the same memory, the next open of the file.
Records the memory was not derived into (immutable checkpoint versions, raw evidence) are
reported, not changed.
"""

from __future__ import annotations

import json
import re

from ctxkeep.errors import NotFound
from ctxkeep.models.memory import MemoryForgetRequest, MemoryForgetResult, Tombstone
from ctxkeep.storage import DigestRow, MemoryRow, SearchFilter, TombstoneRow, Tx
from ctxkeep.text import match_key, utc_text, utc_moment
from ctxkeep.tools.evidence import CONTENTS
from ctxkeep.tools.memory.records import claim_prefix, key_digest
from ctxkeep.tools.redaction.stored import redacted
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.shared.search_terms import memory_terms, query_terms

FORGOTTEN = "[forgotten memory]"
MAX_REPORTED = 20


def quote_pattern(content: str) -> re.Pattern[str]:
    """The content as it may be quoted: whole words only, any case, any run of whitespace between them."""
    return re.compile(r"(?<!\w)" + r"\s+".join(re.escape(word) for word in content.split()) + r"(?!\w)", re.IGNORECASE)


def _tombstone(row: TombstoneRow) -> Tombstone:
    return Tombstone(
        memory_id=row.memory_id,
        kind=row.kind,
        version=row.version,
        created_at=utc_moment(row.created_at),
        forgotten_at=utc_moment(row.forgotten_at),
        reason=row.reason,
    )


async def _targets(tx: Tx, scope: Scope, req: MemoryForgetRequest) -> tuple[list[MemoryRow], list[TombstoneRow]]:
    """The versions to forget, or (when none is left) the tombstones of an earlier forget of the same target."""
    if req.memory_id is not None:
        rows = await tx.memories.by_ids(scope.project, [req.memory_id])
        earlier = [] if rows else await tx.memories.tombstones(scope.project, [req.memory_id])
        what = f"memory {req.memory_id!r}"
    else:
        assert req.key is not None
        key = match_key(redacted(req.key)[0])  # as memory_write stored it
        rows = await tx.memories.versions(scope.project, [key])
        earlier = [] if rows else await tx.memories.tombstones_of_key(scope.project, key_digest(key))
        what = f"memory key {req.key!r}"
    if not rows and not earlier:
        raise NotFound(f"no {what} in this project; memory_search lists the memories and their ids")
    return rows, earlier


def _scrubbed(digest: DigestRow, patterns: list[re.Pattern[str]]) -> DigestRow | None:
    """The digest with every quote replaced, or None when it quotes none of the texts."""
    text, summary = digest.digest, digest.summary
    for pattern in patterns:
        text = pattern.sub(FORGOTTEN, text)
        summary = pattern.sub(FORGOTTEN, summary) if summary is not None else None
    if text == digest.digest and summary == digest.summary:
        return None
    return DigestRow(digest.task_id, text, summary, digest.source, digest.updated_at, digest.imported_from)


async def _scrub_digests(tx: Tx, scope: Scope, rows: list[MemoryRow]) -> int:
    """Replace the quotes of the memories in the digests and summaries written since the first of them was (an older
    digest cannot have quoted it); how many were rewritten."""
    patterns = [quote_pattern(r.content) for r in rows]
    since = min(r.created_at for r in rows)
    scrubbed = 0
    for digest in await tx.digests.all(scope.project):
        found: DigestRow | None = digest
        while found is not None and (rewritten := _scrubbed(found, patterns) if found.updated_at >= since else None):
            if await tx.digests.rewrite(scope.project, rewritten):
                scrubbed += 1
                break
            found = await tx.digests.get(scope.project, digest.task_id)  # a new digest came in meanwhile: scrub it
    return scrubbed


async def _still_quoted(tx: Tx, scope: Scope, rows: list[MemoryRow], patterns: list[re.Pattern[str]]) -> list[str]:
    """Checkpoint versions and evidence records (the best matches only) that hold one of the texts."""
    found: list[str] = []
    for row in rows:
        needle = json.dumps(row.content, ensure_ascii=False)[1:-1]  # as it appears inside a stored state's JSON
        found += [
            f"{task} v{version}" for task, version in await tx.checkpoints.quoting(scope.project, needle, MAX_REPORTED)
        ]
        terms = query_terms(row.content)
        if terms:
            where = SearchFilter(task_id=None, kind=None, tags=[], valid_at=None, exclude_expired_at=None)
            hits = [hit for hit, _ in await tx.evidence.search(scope.project, terms, where, MAX_REPORTED)]
            contents = await CONTENTS.contents(tx, hits)
            found += [hit.ref for hit in hits if any(p.search(contents[hit.ref]) for p in patterns)]
    return sorted(set(found))[:MAX_REPORTED]


async def memory_forget(scope: Scope, req: MemoryForgetRequest) -> MemoryForgetResult:
    """Forget one memory version (memory_id) or every version of a key, with what was derived from them.

    Forgetting again what is already forgotten returns the same tombstones, and finishes the WAL
    truncation when the first forget could not. Raises NotFound for an id or key never stored here.
    """
    now = utc_text(scope.clock()) or ""
    async with scope.store.snapshot() as tx:
        rows, earlier = await _targets(tx, scope, req)
    if not rows:  # already forgotten: nothing left to remove but what the first forget may still owe
        return MemoryForgetResult(
            forgotten=[_tombstone(t) for t in earlier],
            already_forgotten=True,
            working_sets_cleared=0,
            digests_scrubbed=0,
            still_quoted_in=[],
            wal_cleared=await scope.store.checkpoint_wal(),
        )
    async with scope.store.transaction() as tx:
        for key_match in sorted({row.key_match for row in rows}):
            await tx.memories.lock(scope.project, key_match)  # no new version of the key while it is forgotten
        rows, earlier = await _targets(tx, scope, req)
        if rows:
            tombstones = [
                TombstoneRow(r.memory_id, key_digest(r.key_match), r.kind, r.version, r.created_at, now, req.reason)
                for r in rows
            ]
            await tx.memories.delete(scope.project, [(r, memory_terms(r.key, r.content)) for r in rows], tombstones)
            cleared = await tx.working_sets.forget_memories(
                scope.project, [r.memory_id for r in rows], [claim_prefix(r) for r in rows]
            )
            scrubbed = await _scrub_digests(tx, scope, rows)
    if not rows:  # another process forgot it between the two looks
        return await memory_forget(scope, req)
    async with scope.store.snapshot() as tx:
        quoted = await _still_quoted(tx, scope, rows, [quote_pattern(r.content) for r in rows])
    wal_cleared = await scope.store.checkpoint_wal()
    return MemoryForgetResult(
        forgotten=[_tombstone(t) for t in tombstones],
        working_sets_cleared=cleared,
        digests_scrubbed=scrubbed,
        still_quoted_in=quoted,
        wal_cleared=wal_cleared,
    )
