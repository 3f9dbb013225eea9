"""Queries over evidence records, their compressed blobs (shared by a project's records with the same content, never
across projects), and the project's full-text index.

The index is contentless and holds keyed terms only (see `index`); `match_expression` is the one place that builds
FTS5 query syntax, from keyed hashes only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import anyio

from ctxkeep.storage.sqlite.reader import Connection
from ctxkeep.storage.rows import EvidenceRow, NewEvidence, SearchFilter
from ctxkeep.storage.sqlite.index import TermKey, match_expression, project_tables
from ctxkeep.storage.sqlite.maintenance import Maintenance

_ROW_COLUMNS = (
    "e.ref, e.kind, e.source, e.title, e.task_id, e.tags_json, e.effective_at, e.expires_at, "
    "e.created_at, e.bytes, e.tokens, e.lines, e.chunk_chars, e.redactions, e.index_version, "
    "b.sha256, e.id, e.blob_id"
)
_BATCH = 400  # stay well under SQLite's bound-parameter limit
# the index's best (this many times the limit) are filtered first, and every match only when too few of them pass: the
# same rows either way; two keeps the join small (a working set's query at 10,000 records: 3.4 ms with 8, 2.3 with 2)
_RANKED_FIRST = 2
_KEY_ON_A_THREAD = 100_000  # characters of terms above which keying runs off the event loop


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
    return [items[i : i + _BATCH] for i in range(0, len(items), _BATCH)]


class Evidence:
    """Evidence queries on one connection (inside a Store transaction or snapshot)."""

    def __init__(self, conn: Connection, key: TermKey, maintenance: Maintenance) -> None:
        self._conn = conn
        self._key = key
        self._maintenance = maintenance

    async def _stored_refs(self, project: str, refs: Sequence[str]) -> set[str]:
        found: set[str] = set()
        for part in _chunks(refs):
            cursor = await self._conn.execute(
                f"SELECT ref FROM evidence WHERE project = ? AND ref IN ({','.join('?' * len(part))})", (project, *part)
            )
            found.update(row[0] for row in await cursor.fetchall())
        return found

    async def insert(self, project: str, items: Sequence[NewEvidence]) -> list[str]:
        """Store the records whose refs are not stored yet, sharing the project's blobs by sha256, and index them;
        the refs this call stored (the transaction is the file's only writer, so what it finds stored stays)."""
        unique = list({i.ref: i for i in items}.values())
        stored = await self._stored_refs(project, [i.ref for i in unique]) if unique else set()
        items = [i for i in unique if i.ref not in stored]
        if not items:
            return []
        await self._conn.executemany(
            "INSERT OR IGNORE INTO blobs (project, sha256, data, bytes) VALUES (?, ?, ?, ?)",
            [(project, i.sha256, i.data, i.bytes) for i in items],
        )
        await self._conn.executemany(
            "INSERT INTO evidence (project, ref, blob_id, kind, source, title, task_id, tags_json, effective_at, expires_at, "
            "created_at, bytes, tokens, lines, chunk_chars, redactions, index_version, ref_project) "
            "SELECT ?, ?, id, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM blobs WHERE project = ? AND sha256 = ?",
            [
                (
                    project,
                    i.ref,
                    i.kind,
                    i.source,
                    i.title,
                    i.task_id,
                    i.tags_json,
                    i.effective_at,
                    i.expires_at,
                    i.created_at,
                    i.bytes,
                    i.tokens,
                    i.lines,
                    i.chunk_chars,
                    i.redactions,
                    i.index_version,
                    i.ref_project,
                    project,
                    i.sha256,
                )
                for i in items
            ],
        )
        tables = await project_tables(self._conn, project, create=True)
        assert tables is not None
        keyed = await self._keyed([i.terms for i in items])
        await self._conn.executemany(
            f"INSERT INTO {tables.evidence} (rowid, terms) SELECT id, ? FROM evidence WHERE project = ? AND ref = ?",
            [(terms, project, i.ref) for terms, i in zip(keyed, items, strict=True)],
        )
        return [i.ref for i in items]

    async def ref_projects(self, project: str, refs: Sequence[str]) -> dict[str, str]:
        found: dict[str, str] = {}
        for part in _chunks(refs):
            cursor = await self._conn.execute(
                f"SELECT ref, ref_project FROM evidence WHERE project = ? AND ref_project IS NOT NULL "
                f"AND ref IN ({','.join('?' * len(part))})",
                (project, *part),
            )
            found.update((row[0], row[1]) for row in await cursor.fetchall())
        return found

    async def _keyed(self, lines: list[str]) -> list[str]:
        if sum(map(len, lines)) < _KEY_ON_A_THREAD:
            return [self._key.line(line) for line in lines]
        return await anyio.to_thread.run_sync(lambda: [self._key.line(line) for line in lines])

    async def rows(
        self, project: str, refs: Sequence[str], where: SearchFilter | None = None
    ) -> dict[str, EvidenceRow]:
        """The records behind `refs` in the project (only those passing `where`, when given)."""
        found: dict[str, EvidenceRow] = {}
        conditions, params = _conditions(project, where) if where else ("e.project = ?", [project])
        for part in _chunks(refs):
            cursor = await self._conn.execute(
                f"SELECT {_ROW_COLUMNS} FROM evidence e JOIN blobs b ON b.id = e.blob_id "
                f"WHERE {conditions} AND e.ref IN ({','.join('?' * len(part))})",
                (*params, *part),
            )
            found.update((row[0], EvidenceRow(*row)) for row in await cursor.fetchall())
        return found

    async def by_prefix(self, project: str, prefix: str, limit: int = 2) -> list[EvidenceRow]:
        """Records whose ref starts with `prefix` (at most `limit`), for short refs shown in working sets."""
        cursor = await self._conn.execute(
            f"SELECT {_ROW_COLUMNS} FROM evidence e JOIN blobs b ON b.id = e.blob_id "
            "WHERE e.project = ? AND e.ref >= ? AND e.ref < ? ORDER BY e.ref LIMIT ?",
            (project, prefix, prefix + "g", limit),
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

    async def neighbours(
        self, project: str, hits: Sequence[EvidenceRow], where: SearchFilter, span: int
    ) -> list[tuple[int, EvidenceRow]]:
        """Up to `span` records on each side of each hit among the records of the same source (insertion order),
        as (hit id, neighbour) pairs; neighbours that fail the filters are left out."""
        if not hits:
            return []
        side = (
            "(SELECT group_concat(id) FROM (SELECT p.id FROM evidence p WHERE p.project = ? AND p.source = h.source "
            "AND p.id {op} h.id ORDER BY p.id {order} LIMIT ?))"
        )
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
                f"WHERE e.id IN ({','.join('?' * len(part))}) AND {conditions} ORDER BY e.id",
                (*map(int, part), *params),
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
            cursor = await self._conn.execute(
                f"SELECT id, data FROM blobs WHERE id IN ({','.join('?' * len(part))})", tuple(map(int, part))
            )
            found.update((int(row[0]), bytes(row[1])) for row in await cursor.fetchall())
        return found

    async def document_frequencies(self, project: str, terms: Sequence[str]) -> dict[str, int]:
        """How many of the project's records hold each term; absent terms are left out."""
        tables = await project_tables(self._conn, project)
        if tables is None or not terms:
            return {}
        found: dict[str, int] = {}
        for keyed, term in self._key.mapping(terms).items():  # fts5vocab looks up `term = ?`, but scans for IN (…)
            cursor = await self._conn.execute(f"SELECT doc FROM {tables.vocab} WHERE term = ?", (keyed,))
            row = await cursor.fetchone()
            if row is not None:
                found[term] = int(row[0])
        return found

    async def search(
        self, project: str, terms: Sequence[str], where: SearchFilter, limit: int
    ) -> list[tuple[EvidenceRow, float]]:
        """Records matching any term, best BM25 (over the project's records only) first, with their score (> 0).

        The project's index is ranked on its own first (FTS5 keeps only the best few), then filtered; only
        when the filters leave too few of those does the slower filtered ranking of every match run.
        """
        tables = await project_tables(self._conn, project)
        if tables is None or not terms:
            return []
        conditions, params = _conditions(project, where)
        # the filters and the limit first, over the records alone; their blobs' hashes only for the rows kept
        outer = (
            f"SELECT {_ROW_COLUMNS}, -h.score FROM (SELECT e.id AS id, f.score AS score FROM {{source}} "
            f"JOIN evidence e ON e.id = f.rowid WHERE {conditions} ORDER BY f.score, e.id LIMIT ?) h "
            "JOIN evidence e ON e.id = h.id JOIN blobs b ON b.id = e.blob_id ORDER BY h.score, h.id"
        )
        table = tables.evidence
        # FTS5's own `rank` (bm25 here) sorts faster than ORDER BY on a bm25() expression
        first = limit * _RANKED_FIRST
        best = f"(SELECT rowid, rank AS score FROM {table} WHERE {table} MATCH ? ORDER BY rank LIMIT {first}) f"
        every = f"(SELECT rowid, bm25({table}) AS score FROM {table} WHERE {table} MATCH ?) f"
        expression = match_expression(list(self._key.mapping(terms)))
        cursor = await self._conn.execute(outer.format(source=best), (expression, *params, limit))
        rows = list(await cursor.fetchall())
        if len(rows) < limit:
            cursor = await self._conn.execute(outer.format(source=every), (expression, *params, limit))
            rows = list(await cursor.fetchall())
        return [(EvidenceRow(*row[:-1]), float(row[-1])) for row in rows]

    async def delete(self, project: str, row: EvidenceRow, terms: str) -> bool:
        """Remove a record and its index entry (leaving the index merge owed), and its blob when no other record of
        the project uses it. True when the blob went."""
        tables = await project_tables(self._conn, project)
        if tables is not None:
            await self._conn.execute(
                f"INSERT INTO {tables.evidence} ({tables.evidence}, rowid, terms) VALUES ('delete', ?, ?)",
                (row.id, self._key.line(terms)),
            )
            await self._maintenance.owe_merge(tables.evidence)
        else:
            await self._maintenance.owe_truncation()
        cursor = await self._conn.execute("DELETE FROM evidence WHERE id = ? AND project = ?", (row.id, project))
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
            "WHERE e.project = ? AND e.expires_at IS NOT NULL AND e.expires_at <= ? ORDER BY e.id",
            (project, now),
        )
        return [EvidenceRow(*row) for row in await cursor.fetchall()]

    async def delete_orphan_blobs(self, project: str) -> int:
        """Remove the project's blobs no record uses (the WAL truncation is owed)."""
        cursor = await self._conn.execute(
            "DELETE FROM blobs WHERE project = ? AND NOT EXISTS (SELECT 1 FROM evidence e WHERE e.blob_id = blobs.id)",
            (project,),
        )
        if cursor.rowcount:
            await self._maintenance.owe_truncation()
        return cursor.rowcount
