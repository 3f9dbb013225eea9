"""Queries over evidence records, their shared compressed blobs, and the full-text index.

The index is contentless and holds hashed terms (see `ctxkeep.tools.terms`); `match_expression`
is the one place that builds FTS5 query syntax, from hashes only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

import aiosqlite

from ctxkeep.storage.rows import EvidenceRow, NewEvidence, SearchFilter

_ROW_COLUMNS = ("e.ref, e.kind, e.source, e.title, e.task_id, e.tags_json, e.effective_at, e.expires_at, "
                "e.created_at, e.bytes, e.tokens, e.lines, e.chunk_chars, e.redactions, e.index_version, "
                "b.sha256, e.id, e.blob_id")
_HASHED_TERM = re.compile(r"^[0-9a-f]{12}$")
_BATCH = 400  # stay well under SQLite's bound-parameter limit


def match_expression(hashed_terms: Sequence[str]) -> str:
    """An FTS5 query matching any of the terms; only hex hashes are accepted, so no syntax can leak in."""
    for term in hashed_terms:
        if not _HASHED_TERM.match(term):
            raise ValueError(f"not a hashed term: {term!r}")
    return " OR ".join(f'"{term}"' for term in hashed_terms)


def _conditions(project: str, where: SearchFilter) -> tuple[str, list[str]]:
    """The WHERE clause (over the alias `e`) and its parameters for the filters of a search."""
    clauses, params = ["e.project = ?"], [project]
    if where.task_id is not None and where.shared:
        clauses.append("(e.task_id = ? OR e.task_id IS NULL)")
        params.append(where.task_id)
    for column, value in (("e.task_id", None if where.shared else where.task_id), ("e.kind", where.kind)):
        if value is not None:
            clauses.append(f"{column} = ?")
            params.append(value)
    for tag in where.tags:
        clauses.append("EXISTS (SELECT 1 FROM json_each(e.tags_json) WHERE value = ?)")
        params.append(tag)
    if where.valid_at is not None:
        clauses.append("(e.effective_at IS NULL OR e.effective_at <= ?) AND (e.expires_at IS NULL OR e.expires_at > ?)")
        params += [where.valid_at, where.valid_at]
    if where.exclude_expired_at is not None:
        clauses.append("(e.expires_at IS NULL OR e.expires_at > ?)")
        params.append(where.exclude_expired_at)
    return " AND ".join(clauses), params


def _chunks(items: Sequence[str]) -> list[Sequence[str]]:
    return [items[i:i + _BATCH] for i in range(0, len(items), _BATCH)]


class Evidence:
    """Evidence queries on one connection (inside a Store transaction or snapshot)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def existing_refs(self, project: str, refs: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for part in _chunks(refs):
            cursor = await self._conn.execute(
                f"SELECT ref FROM evidence WHERE project = ? AND ref IN ({','.join('?' * len(part))})", (project, *part)
            )
            found.update(row[0] for row in await cursor.fetchall())
        return found

    async def insert(self, project: str, items: Sequence[NewEvidence]) -> None:
        """Store new records (refs must not exist yet), sharing blobs by sha256, and index them."""
        await self._conn.executemany(
            "INSERT OR IGNORE INTO blobs (sha256, data, bytes) VALUES (?, ?, ?)", [(i.sha256, i.data, i.bytes) for i in items]
        )
        await self._conn.executemany(
            "INSERT INTO evidence (project, ref, blob_id, kind, source, title, task_id, tags_json, effective_at, expires_at, "
            "created_at, bytes, tokens, lines, chunk_chars, redactions, index_version) "
            "SELECT ?, ?, id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM blobs WHERE sha256 = ?",
            [(project, i.ref, i.kind, i.source, i.title, i.task_id, i.tags_json, i.effective_at, i.expires_at, i.created_at,
              i.bytes, i.tokens, i.lines, i.chunk_chars, i.redactions, i.index_version, i.sha256) for i in items],
        )
        await self._conn.executemany(
            "INSERT INTO evidence_fts (rowid, terms) SELECT id, ? FROM evidence WHERE project = ? AND ref = ?",
            [(i.terms, project, i.ref) for i in items],
        )

    async def refresh(self, project: str, items: Sequence[NewEvidence]) -> None:
        """A repeated put of existing records: add its tags, take its validity window."""
        await self._conn.executemany(
            "UPDATE evidence SET tags_json = (SELECT json_group_array(value) FROM (SELECT value FROM json_each(tags_json) "
            "UNION SELECT value FROM json_each(?) ORDER BY value)), effective_at = ?, expires_at = ? "
            "WHERE project = ? AND ref = ?",
            [(i.tags_json, i.effective_at, i.expires_at, project, i.ref) for i in items],
        )

    async def rows(self, project: str, refs: Sequence[str], where: SearchFilter | None = None) -> dict[str, EvidenceRow]:
        """The records behind `refs` in the project (only those passing `where`, when given)."""
        found: dict[str, EvidenceRow] = {}
        conditions, params = _conditions(project, where) if where else ("e.project = ?", [project])
        for part in _chunks(refs):
            cursor = await self._conn.execute(
                f"SELECT {_ROW_COLUMNS} FROM evidence e JOIN blobs b ON b.id = e.blob_id "
                f"WHERE {conditions} AND e.ref IN ({','.join('?' * len(part))})", (*params, *part),
            )
            found.update((row[0], EvidenceRow(*row)) for row in await cursor.fetchall())
        return found

    async def by_prefix(self, project: str, prefix: str, limit: int = 2) -> list[EvidenceRow]:
        """Records whose ref starts with `prefix` (at most `limit`), for short refs shown in working sets."""
        cursor = await self._conn.execute(
            f"SELECT {_ROW_COLUMNS} FROM evidence e JOIN blobs b ON b.id = e.blob_id "
            "WHERE e.project = ? AND e.ref >= ? AND e.ref < ? ORDER BY e.ref LIMIT ?", (project, prefix, prefix + "g", limit),
        )
        return [EvidenceRow(*row) for row in await cursor.fetchall()]

    async def sharing_prefix(self, project: str, prefixes: Sequence[str]) -> list[str]:
        """Every ref of the project that starts with one of `prefixes`."""
        found: list[str] = []
        for part in _chunks(sorted(set(prefixes))):
            cursor = await self._conn.execute(
                "SELECT e.ref FROM json_each(?) p CROSS JOIN evidence e ON e.project = ? AND e.ref >= p.value AND e.ref < p.value || 'g'",
                (json.dumps(list(part)), project),
            )
            found += [row[0] for row in await cursor.fetchall()]
        return found

    async def neighbours(self, project: str, hits: Sequence[EvidenceRow], where: SearchFilter, span: int) -> list[tuple[int, EvidenceRow]]:
        """Up to `span` records on each side of each hit among the records of the same source (insertion order),
        as (hit id, neighbour) pairs; neighbours that fail the filters are left out."""
        if not hits:
            return []
        side = ("(SELECT group_concat(id) FROM (SELECT p.id FROM evidence p WHERE p.project = ? AND p.source = h.source "
                "AND p.id {op} h.id ORDER BY p.id {order} LIMIT ?))")
        cursor = await self._conn.execute(
            "WITH h(id, source) AS (SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)) "
            f"SELECT h.id, {side.format(op='<', order='DESC')}, {side.format(op='>', order='ASC')} FROM h",
            (json.dumps([[row.id, row.source] for row in hits]), project, span, project, span),
        )
        near: dict[int, list[int]] = {}
        for hit, *sides in await cursor.fetchall():
            for neighbour in ",".join(str(ids) for ids in sides if ids).split(","):
                if neighbour:
                    near.setdefault(int(neighbour), []).append(int(hit))
        pairs: list[tuple[int, EvidenceRow]] = []
        conditions, params = _conditions(project, where)
        for part in _chunks([str(i) for i in sorted(near)]):
            cursor = await self._conn.execute(
                f"SELECT {_ROW_COLUMNS} FROM evidence e JOIN blobs b ON b.id = e.blob_id "
                f"WHERE e.id IN ({','.join('?' * len(part))}) AND {conditions} ORDER BY e.id", (*map(int, part), *params),
            )
            pairs += [(hit, EvidenceRow(*row)) for row in await cursor.fetchall() for hit in near[row[16]]]
        return pairs

    async def blob(self, blob_id: int) -> bytes:
        cursor = await self._conn.execute("SELECT data FROM blobs WHERE id = ?", (blob_id,))
        row = await cursor.fetchone()
        if row is None:
            raise LookupError(f"blob {blob_id} is missing")
        return bytes(row[0])

    async def blobs(self, blob_ids: Sequence[int]) -> dict[int, bytes]:
        found: dict[int, bytes] = {}
        for part in _chunks([str(i) for i in sorted(set(blob_ids))]):
            cursor = await self._conn.execute(f"SELECT id, data FROM blobs WHERE id IN ({','.join('?' * len(part))})", tuple(map(int, part)))
            found.update((int(row[0]), bytes(row[1])) for row in await cursor.fetchall())
        return found

    async def document_frequencies(self, hashed_terms: Sequence[str]) -> dict[str, int]:
        """How many records (all projects) hold each term; absent terms are left out."""
        for term in hashed_terms:
            match_expression([term])  # refuses anything that is not a hashed term
        cursor = await self._conn.execute(
            f"SELECT term, doc FROM evidence_vocab WHERE term IN ({','.join('?' * len(hashed_terms))})", tuple(hashed_terms)
        )
        return {term: int(doc) for term, doc in await cursor.fetchall()}

    async def search(self, project: str, hashed_terms: Sequence[str], where: SearchFilter, limit: int) -> list[tuple[EvidenceRow, float]]:
        """Records matching any term, best BM25 first, with their score (> 0).

        The index is ranked on its own first (FTS5 keeps only the best few), then filtered; only
        when the filters leave too few of those does the slower filtered ranking of every match run.
        """
        conditions, params = _conditions(project, where)
        outer = (f"SELECT {_ROW_COLUMNS}, -f.score FROM {{source}} JOIN evidence e ON e.id = f.rowid "
                 f"JOIN blobs b ON b.id = e.blob_id WHERE {conditions} ORDER BY f.score, e.id LIMIT ?")
        best = f"(SELECT rowid, bm25(evidence_fts) AS score FROM evidence_fts WHERE evidence_fts MATCH ? ORDER BY score LIMIT {limit * 8}) f"
        every = "(SELECT rowid, bm25(evidence_fts) AS score FROM evidence_fts WHERE evidence_fts MATCH ?) f"
        expression = match_expression(hashed_terms)
        cursor = await self._conn.execute(outer.format(source=best), (expression, *params, limit))
        rows = list(await cursor.fetchall())
        if len(rows) < limit:
            cursor = await self._conn.execute(outer.format(source=every), (expression, *params, limit))
            rows = list(await cursor.fetchall())
        return [(EvidenceRow(*row[:-1]), float(row[-1])) for row in rows]

    async def delete(self, row: EvidenceRow, terms: str) -> bool:
        """Remove a record and its index entry; remove its blob when no record uses it. True when the blob went."""
        await self._conn.execute("INSERT INTO evidence_fts (evidence_fts, rowid, terms) VALUES ('delete', ?, ?)", (row.id, terms))
        cursor = await self._conn.execute("DELETE FROM evidence WHERE id = ?", (row.id,))
        if cursor.rowcount != 1:
            raise LookupError(f"evidence row {row.id} vanished inside its own delete transaction")
        cursor = await self._conn.execute("SELECT 1 FROM evidence WHERE blob_id = ? LIMIT 1", (row.blob_id,))
        if await cursor.fetchone():
            return False
        await self._conn.execute("DELETE FROM blobs WHERE id = ?", (row.blob_id,))
        return True

    async def expired(self, project: str, now: str) -> list[EvidenceRow]:
        cursor = await self._conn.execute(
            f"SELECT {_ROW_COLUMNS} FROM evidence e JOIN blobs b ON b.id = e.blob_id "
            "WHERE e.project = ? AND e.expires_at IS NOT NULL AND e.expires_at <= ? ORDER BY e.id", (project, now),
        )
        return [EvidenceRow(*row) for row in await cursor.fetchall()]

    async def delete_orphan_blobs(self) -> int:
        cursor = await self._conn.execute("DELETE FROM blobs WHERE id NOT IN (SELECT blob_id FROM evidence)")
        return cursor.rowcount
