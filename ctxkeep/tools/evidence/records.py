"""The evidence store: put raw content once, get back exactly the part needed, search, delete.

"Compression is not deletion": what leaves the context is stored (secrets redacted) under a
ref that brings it back byte for byte. A ref names a record — project, content, kind, source,
title, task — so an identical put returns the existing ref (`deduplicated: true`) and leaves the
record as first stored: the second put's tags, effective_at and expires_at are ignored, so an
expired record stays expired (a refetched copy is stored under another title or source, or after
evidence_delete). A put deduplicates only against a record whose content hash and fields are its own: a record
planted under the ref by a bundle import that did not check refs is replaced, never returned. A project's records
with the same content share one blob; projects never share.
"""

from __future__ import annotations

import hashlib
import json
import os
import zlib
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import anyio

from ctxkeep.errors import InvalidInput, NotFound
from ctxkeep.models.common import MAX_EVIDENCE_BYTES
from ctxkeep.models.evidence import (
    MAX_BATCH_BYTES,
    MAX_BATCH_ITEMS,
    EvidenceBatchResult,
    EvidenceDeleteResult,
    EvidenceGcResult,
    EvidenceItem,
    EvidenceStored,
)
from ctxkeep.storage import EvidenceRow, NewEvidence, Tx
from ctxkeep.text import utc_text
from ctxkeep.tokens import count_tokens_many
from ctxkeep.tools.shared.preview import shape_tool_output
from ctxkeep.tools.redaction.stored import redacted
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.shared.search_terms import INDEX_VERSION, evidence_terms

CHUNK_TOKENS = 4_000
MAX_CHUNK_CHARS = 6_000  # at most ~4 tokens a character, so any chunk fits the 25,000-token read limit
_CACHE_CHARS = 64_000_000
_GC_BATCH = 500  # records deleted per transaction by gc (the index is merged once, at the end)


def line_count(text: str) -> int:
    return text.count("\n") + (0 if text == "" or text.endswith("\n") else 1)


def chunk_size(chars: int, tokens: int) -> int:
    """Characters per chunk for one item: about 4,000 tokens at its average density."""
    return max(1_000, min(MAX_CHUNK_CHARS, CHUNK_TOKENS * chars // max(tokens, 1)))


REF_CHARS = 27  # "ev_" + 24 hex digits
MIN_PREFIX_CHARS = 9  # "ev_" + 6 hex digits


def evidence_ref(project: str, sha256: str, item: EvidenceItem) -> str:
    identity = "\0".join([project, sha256, item.kind, item.source or "", item.title or "", item.task_id or ""])
    return "ev_" + hashlib.sha256(identity.encode("utf-8")).hexdigest()[:24]


def _redacted(item: EvidenceItem, limit: int) -> tuple[EvidenceItem, str, int]:
    """The item with secrets replaced in every field (unless it says redact=false), its content, and how many were
    replaced."""
    item, redactions = redacted(item, "the evidence item") if item.redact else (item, 0)
    content = item.content
    size = len(content.encode("utf-8"))
    if size > limit:
        raise InvalidInput(
            f"content is {size:,} bytes, over the {limit:,} byte limit; store it in parts, or keep "
            "only the part that matters"
        )
    return item, content, redactions


def _prepare_batch(
    project: str, items: list[EvidenceItem], limit: int, created_at: str
) -> list[tuple[NewEvidence, str]]:
    """Everything a put stores, and each preview, computed before the transaction; token counting runs beside the rest."""
    redacted = [_redacted(item, limit) for item in items]
    with ThreadPoolExecutor(max_workers=1) as pool:
        counting = pool.submit(count_tokens_many, [content for _, content, _ in redacted])
        parts = [_record_parts(project, item, content) for item, content, _ in redacted]
        counts = counting.result()
    return [
        (
            NewEvidence(
                **part,
                tokens=tokens,
                chunk_chars=chunk_size(len(content), tokens),
                redactions=redactions,
                created_at=created_at,
            ),
            shape_tool_output(content, item.kind, item.source),
        )
        for part, tokens, (item, content, redactions) in zip(parts, counts, redacted, strict=True)
    ]


def stored_record(
    project: str, item: EvidenceItem, created_at: str, redactions: int = 0, limit: int = MAX_EVIDENCE_BYTES
) -> NewEvidence:
    """The record a put of `item` stores in `project` (redacted as a put redacts, unless `item.redact` is false; its
    ref computed from the redacted text); `redactions` made earlier are added to the count. Raises InvalidInput."""
    item, content, found = _redacted(item, limit)
    (tokens,) = count_tokens_many([content])
    return NewEvidence(
        **_record_parts(project, item, content),
        tokens=tokens,
        chunk_chars=chunk_size(len(content), tokens),
        redactions=redactions + found,
        created_at=created_at,
    )


def _record_parts(project: str, item: EvidenceItem, content: str) -> dict[str, Any]:
    raw = content.encode("utf-8")
    sha256 = hashlib.sha256(raw).hexdigest()
    return dict(
        ref=evidence_ref(project, sha256, item),
        sha256=sha256,
        data=zlib.compress(raw, 6),
        kind=item.kind,
        source=item.source,
        title=item.title,
        task_id=item.task_id,
        tags_json=json.dumps(sorted(set(item.tags))),
        effective_at=utc_text(item.effective_at),
        expires_at=utc_text(item.expires_at),
        bytes=len(raw),
        lines=line_count(content),
        index_version=INDEX_VERSION,
        terms=evidence_terms(item.title, content),
    )


def _stored(row: NewEvidence | EvidenceRow, preview: str, deduplicated: bool) -> EvidenceStored:
    return EvidenceStored(
        ref=row.ref,
        bytes=row.bytes,
        tokens=row.tokens,
        lines=row.lines,
        preview=preview,
        redactions=row.redactions,
        deduplicated=deduplicated,
    )


def _check_batch(items: list[EvidenceItem]) -> None:
    if not items:
        raise InvalidInput("items is empty; send at least one item, or use content for a single put")
    if len(items) > MAX_BATCH_ITEMS:
        raise InvalidInput(f"a batch holds at most {MAX_BATCH_ITEMS:,} items, got {len(items):,}; split it")
    total = sum(len(i.content) for i in items)
    if total > MAX_BATCH_BYTES:
        raise InvalidInput(f"the batch holds {total:,} characters, over {MAX_BATCH_BYTES:,}; split it")


async def evidence_put(
    scope: Scope, items: list[EvidenceItem], max_item_bytes: int = MAX_EVIDENCE_BYTES
) -> EvidenceBatchResult:
    """Store items in one transaction; returns one ref per item in input order. A record stored before (same ref) is
    left as it is (`deduplicated`), also one a concurrent call stores at the same moment. Raises InvalidInput.

    Redaction, counting and indexing work happen before the transaction, which only inserts (content-addressed: it
    locks nothing another put waits for)."""
    _check_batch(items)
    created_at = utc_text(scope.clock())
    assert created_at is not None
    prepared = await anyio.to_thread.run_sync(_prepare_batch, scope.project, items, max_item_bytes, created_at)
    first: dict[str, NewEvidence] = {}
    for record, _ in prepared:
        first.setdefault(record.ref, record)
    async with scope.store.snapshot() as tx:
        existing: dict[str, NewEvidence | EvidenceRow] = dict(await tx.evidence.rows(scope.project, list(first)))
    stale = [ref for ref, row in existing.items() if _identity(row) != _identity(first[ref])]
    if stale:  # only an import that did not check refs stores one: rare, so its own transaction
        async with scope.store.transaction() as tx:
            for ref in stale:
                row = existing.pop(ref)
                assert isinstance(row, EvidenceRow)
                await _replace_stale(tx, scope, row)
    fresh = [r for ref, r in first.items() if ref not in existing]
    if fresh:
        async with scope.store.transaction() as tx:
            inserted = set(await tx.evidence.insert(scope.project, fresh))
        existing.update((r.ref, r) for r in fresh if r.ref not in inserted)  # stored meanwhile by another call
    stored, seen = [], set(existing)
    for record, preview in prepared:  # a ref fixes content, kind and source, so the preview is the stored one's
        stored.append(_stored(existing.get(record.ref) or record, preview, deduplicated=record.ref in seen))
        seen.add(record.ref)
    return EvidenceBatchResult(refs=[s.ref for s in stored], items=stored)


def _identity(row: NewEvidence | EvidenceRow) -> tuple[str | None, ...]:
    """What a ref names: a stored record that differs is not the record its ref stands for."""
    return (row.sha256, row.kind, row.source, row.title, row.task_id)


async def _replace_stale(tx: Tx, scope: Scope, row: EvidenceRow) -> None:
    """Delete a record whose content is not what its ref names (only an import that did not check refs could store
    one), so the put stores the record its ref stands for instead of returning the other text as deduplicated."""
    if row.index_version != INDEX_VERSION:
        raise InvalidInput(
            f"evidence {row.ref!r} holds other content than this put gives it, and was indexed by another ctxkeep "
            f"version ({row.index_version}); delete it with that version (evidence_delete), then put again"
        )
    await tx.evidence.delete(scope.project, row, evidence_terms(row.title, await CONTENTS.content(tx, row)))
    CONTENTS.forget(row.sha256)


class ContentCache:
    """Recently read contents by blob hash (immutable), so paging through a large item decompresses it once."""

    def __init__(self, max_chars: int = _CACHE_CHARS) -> None:
        self._items: OrderedDict[str, str] = OrderedDict()
        self._max = max_chars
        self._chars = 0

    async def content(self, tx: Tx, row: EvidenceRow) -> str:
        text = self._items.get(row.sha256)
        if text is None:
            text = self._keep(row.sha256, zlib.decompress(await tx.evidence.blob(row.blob_id)).decode("utf-8"))
        self._items.move_to_end(row.sha256)
        return text

    async def contents(self, tx: Tx, rows: Sequence[EvidenceRow]) -> dict[str, str]:
        """The content of each row by ref, reading the blobs not cached in one query."""
        missing = {row.blob_id: row.sha256 for row in rows if row.sha256 not in self._items}
        found = {
            missing[blob_id]: zlib.decompress(data).decode("utf-8")
            for blob_id, data in (await tx.evidence.blobs(list(missing))).items()
        }
        texts = {row.ref: found[row.sha256] if row.sha256 in found else self._items.get(row.sha256) for row in rows}
        for sha256, text in found.items():
            self._keep(sha256, text)
        if any(text is None for text in texts.values()):
            raise LookupError("a blob vanished while its record was being read")
        return {ref: text for ref, text in texts.items() if text is not None}

    def _keep(self, sha256: str, text: str) -> str:
        self._items[sha256] = text
        self._chars += len(text)
        while self._chars > self._max and len(self._items) > 1:
            self._chars -= len(self._items.popitem(last=False)[1])
        return text

    def forget(self, sha256: str) -> None:
        self._chars -= len(self._items.pop(sha256, ""))


CONTENTS = ContentCache()


async def load_row(tx: Tx, scope: Scope, ref: str, prefix_ok: bool = False) -> EvidenceRow:
    """The record behind a ref in this project, or behind a unique prefix of one (at least ev_ + 6 hex digits, as
    working sets show them) when `prefix_ok`; raises NotFound, or InvalidInput for an ambiguous prefix."""
    row = (await tx.evidence.rows(scope.project, [ref])).get(ref)
    if row is None and prefix_ok and len(ref) < MIN_PREFIX_CHARS:
        raise InvalidInput(
            f"{ref!r} is too short to identify one record: a short ref needs at least {MIN_PREFIX_CHARS - 3} hex "
            f"digits after ev_ ({ref!r} has {max(0, len(ref) - 3)}); the full refs are in evidence_search hits"
        )
    if row is None and prefix_ok and len(ref) < REF_CHARS:
        matches = await tx.evidence.by_prefix(scope.project, ref, SHOWN_MATCHES + 1)
        if len(matches) > 1:
            raise InvalidInput(_ambiguous(ref, [match.ref for match in matches]))
        row = matches[0] if matches else None
    if row is None:
        raise NotFound(f"no evidence {ref!r} in this project; refs come from evidence_put or evidence_search")
    return row


SHOWN_MATCHES = 5  # refs an ambiguous prefix names


def _ambiguous(ref: str, matches: list[str]) -> str:
    """What an ambiguous short ref matches, and how many hex digits tell those apart."""
    shown = sorted(matches)[:SHOWN_MATCHES]
    count = f"{len(shown)}" if len(matches) <= SHOWN_MATCHES else f"more than {SHOWN_MATCHES}"
    digits = max(len(os.path.commonprefix([a, b])) for a, b in zip(shown, shown[1:], strict=False)) - 3 + 1
    return (
        f"{ref!r} matches {count} records ({', '.join(shown)}{', …' if len(matches) > SHOWN_MATCHES else ''}); send at least "
        f"{digits} hex digits after ev_, or the full ref (evidence_search hits and the working set's evidence_refs show them)"
    )


async def _delete(scope: Scope, refs: list[str]) -> dict[str, bool]:
    """Delete records (full refs) with their index entries in one transaction; for each, whether its blob went."""
    async with scope.store.snapshot() as tx:
        rows = [await load_row(tx, scope, ref) for ref in refs]
        # A ref fixes the content and title, so these terms are the ones indexed for any record under it.
        terms = {row.ref: evidence_terms(row.title, await CONTENTS.content(tx, row)) for row in rows}
    for row in rows:
        if row.index_version != INDEX_VERSION:
            raise InvalidInput(
                f"evidence {row.ref!r} was indexed by another ctxkeep version ({row.index_version}); "
                "delete it with that version, or rebuild the index first"
            )
    removed: dict[str, bool] = {}
    async with scope.store.transaction() as tx:
        for row in rows:
            current = await load_row(tx, scope, row.ref)  # the record as it is now, not as the snapshot saw it
            removed[row.ref] = await tx.evidence.delete(scope.project, current, terms[row.ref])
    for row in rows:
        if removed[row.ref]:
            CONTENTS.forget(row.sha256)
    return removed


async def evidence_delete(scope: Scope, ref: str) -> EvidenceDeleteResult:
    """Delete a record, its index entry, and its blob when no other record of the project uses it; then merge the
    index and truncate the WAL (`wal_truncated: false`: a reader kept it from finishing; it is finished later)."""
    removed = await _delete(scope, [ref])
    wal_truncated = await scope.store.checkpoint_wal()
    return EvidenceDeleteResult(ref=ref, deleted=True, blob_removed=removed[ref], wal_truncated=wal_truncated)


def _referenced_refs(states_json: list[str]) -> set[str]:
    refs: set[str] = set()
    for text in states_json:
        state = json.loads(text)
        refs.update(state.get("evidence_refs", []))
        refs.update(f["source_ref"] for f in state.get("facts", []) if f.get("source_ref"))
    return refs


async def evidence_gc(scope: Scope) -> EvidenceGcResult:
    """Delete this project's expired evidence, except what a task's latest checkpoint still cites (listed instead)."""
    now = utc_text(scope.clock())
    assert now is not None
    async with scope.store.snapshot() as tx:
        expired = await tx.evidence.expired(scope.project, now)
        cited = _referenced_refs(
            [task.state_json for task in await tx.checkpoints.tasks(scope.project, limit=1_000_000)]
        )
    prefixes = tuple(
        ref for ref in cited if MIN_PREFIX_CHARS <= len(ref) < REF_CHARS
    )  # short refs, as working sets show
    kept = [row.ref for row in expired if row.ref in cited or row.ref.startswith(prefixes)]
    deleted = [row.ref for row in expired if row.ref not in kept]
    for start in range(0, len(deleted), _GC_BATCH):
        await _delete(scope, deleted[start : start + _GC_BATCH])
    async with scope.store.transaction() as tx:
        orphans = await tx.evidence.delete_orphan_blobs(scope.project)
    await scope.store.checkpoint_wal()
    return EvidenceGcResult(deleted=deleted, kept_cited=kept, orphan_blobs_removed=orphans)
