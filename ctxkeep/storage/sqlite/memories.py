"""Queries over long-term memories (immutable versions per key), their index and their tombstones.

Like the evidence index, the project's memory index is contentless and holds keyed terms only; a forgotten memory's
entries are deleted and the merge of the index is owed (done right after the transaction), so no trace of it stays in
its segments.
"""

from __future__ import annotations

import json
from collections.abc import Sequence


from ctxkeep.storage.sqlite.reader import Connection
from ctxkeep.storage.rows import MemoryRow, TombstoneRow
from ctxkeep.storage.sqlite.index import TermKey, match_expression, project_tables
from ctxkeep.storage.sqlite.maintenance import Maintenance

_COLUMNS = (
    "m.id, m.memory_id, m.key, m.key_match, m.kind, m.content, m.confidence, m.source_json, m.version, "
    "m.created_at, m.effective_at, m.expires_at"
)


class Memories:
    """Memory queries on one connection (inside a Store transaction or snapshot)."""

    def __init__(self, conn: Connection, key: TermKey, maintenance: Maintenance) -> None:
        self._conn = conn
        self._key = key
        self._maintenance = maintenance

    async def lock(self, project: str, key_match: str) -> None:
        """Nothing to take: a write transaction (BEGIN IMMEDIATE) is the file's only writer already."""

    async def versions(self, project: str, key_matches: Sequence[str]) -> list[MemoryRow]:
        """Every stored version of the given keys, oldest first within each key."""
        cursor = await self._conn.execute(
            f"SELECT {_COLUMNS} FROM json_each(?) k CROSS JOIN memories m ON m.project = ? AND m.key_match = k.value "
            "ORDER BY m.key_match, m.version",
            (json.dumps(sorted(set(key_matches))), project),
        )
        return [MemoryRow(*row) for row in await cursor.fetchall()]

    async def by_ids(self, project: str, memory_ids: Sequence[str]) -> list[MemoryRow]:
        cursor = await self._conn.execute(
            f"SELECT {_COLUMNS} FROM json_each(?) i CROSS JOIN memories m ON m.project = ? AND m.memory_id = i.value ORDER BY m.id",
            (json.dumps(sorted(set(memory_ids))), project),
        )
        return [MemoryRow(*row) for row in await cursor.fetchall()]

    async def keys(self, project: str, kind: str | None, limit: int) -> list[str]:
        """Keys with a version of `kind` (any kind when None), the most recently written first."""
        cursor = await self._conn.execute(
            "SELECT key_match FROM memories WHERE project = ? AND (? IS NULL OR kind = ?) "
            "GROUP BY key_match ORDER BY MAX(id) DESC LIMIT ?",
            (project, kind, kind, limit),
        )
        return [row[0] for row in await cursor.fetchall()]

    async def matching(self, project: str, terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
        """(key, best BM25 score > 0, over the project's memories only) of the keys whose versions hold any of the
        terms, best first."""
        tables = await project_tables(self._conn, project)
        if tables is None or not terms:
            return []
        table = tables.memory
        cursor = await self._conn.execute(
            f"SELECT m.key_match, MAX(f.score) AS best FROM (SELECT rowid, -bm25({table}) AS score FROM {table} "
            f"WHERE {table} MATCH ? ORDER BY score DESC LIMIT 10000) f JOIN memories m ON m.id = f.rowid WHERE m.project = ? "
            "GROUP BY m.key_match ORDER BY best DESC, m.key_match LIMIT ?",
            (match_expression(list(self._key.mapping(terms))), project, limit),
        )
        return [(row[0], float(row[1])) for row in await cursor.fetchall()]

    async def next_version(self, project: str, key_match: str, key_sha256: str) -> int:
        """One more than any version of the key ever stored, forgotten ones included (ids never repeat)."""
        cursor = await self._conn.execute(
            "SELECT MAX(v) FROM (SELECT MAX(version) AS v FROM memories WHERE project = ? AND key_match = ? "
            "UNION ALL SELECT MAX(version) FROM memory_tombstones WHERE project = ? AND key_sha256 = ?)",
            (project, key_match, project, key_sha256),
        )
        row = await cursor.fetchone()
        return int(row[0] or 0) + 1 if row else 1

    async def insert_next(self, project: str, row: MemoryRow, terms: str, key_sha256: str) -> MemoryRow | None:
        """Store `row` as its key's next version when `row.version` still is; None otherwise (the transaction is the
        file's only writer, so nothing can come between the check and the insert)."""
        if await self.next_version(project, row.key_match, key_sha256) != row.version:
            return None
        return await self.insert(project, row, terms)

    async def insert(self, project: str, row: MemoryRow, terms: str) -> MemoryRow:
        cursor = await self._conn.execute(
            "INSERT INTO memories (project, memory_id, key, key_match, kind, content, confidence, source_json, version, "
            "created_at, effective_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                project,
                row.memory_id,
                row.key,
                row.key_match,
                row.kind,
                row.content,
                row.confidence,
                row.source_json,
                row.version,
                row.created_at,
                row.effective_at,
                row.expires_at,
            ),
        )
        stored = MemoryRow(int(cursor.lastrowid or 0), *list(row.__dict__.values())[1:])
        tables = await project_tables(self._conn, project, create=True)
        assert tables is not None
        await self._conn.execute(
            f"INSERT INTO {tables.memory} (rowid, terms) VALUES (?, ?)", (stored.id, self._key.line(terms))
        )
        return stored

    async def delete(
        self, project: str, rows: Sequence[tuple[MemoryRow, str]], tombstones: Sequence[TombstoneRow]
    ) -> None:
        """Remove memories (each with its indexed terms) and their index entries, leave tombstones; the merge of the
        index and the WAL truncation are owed (deleted entries linger in older index segments until merged)."""
        tables = await project_tables(self._conn, project)
        for row, terms in rows:
            if tables is not None:
                await self._conn.execute(
                    f"INSERT INTO {tables.memory} ({tables.memory}, rowid, terms) VALUES ('delete', ?, ?)",
                    (row.id, self._key.line(terms)),
                )
            await self._conn.execute("DELETE FROM memories WHERE id = ? AND project = ?", (row.id, project))
        if tables is not None:
            await self._maintenance.owe_merge(tables.memory)
        await self._maintenance.owe_truncation()
        await self._conn.executemany(
            "INSERT INTO memory_tombstones (project, memory_id, key_sha256, kind, version, created_at, forgotten_at, reason) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (project, t.memory_id, t.key_sha256, t.kind, t.version, t.created_at, t.forgotten_at, t.reason)
                for t in tombstones
            ],
        )

    async def tombstones(self, project: str, memory_ids: Sequence[str]) -> list[TombstoneRow]:
        cursor = await self._conn.execute(
            "SELECT t.memory_id, t.key_sha256, t.kind, t.version, t.created_at, t.forgotten_at, t.reason FROM json_each(?) i "
            "CROSS JOIN memory_tombstones t ON t.project = ? AND t.memory_id = i.value ORDER BY t.memory_id",
            (json.dumps(sorted(set(memory_ids))), project),
        )
        return [TombstoneRow(*row) for row in await cursor.fetchall()]

    async def tombstones_of_key(self, project: str, key_sha256: str) -> list[TombstoneRow]:
        cursor = await self._conn.execute(
            "SELECT memory_id, key_sha256, kind, version, created_at, forgotten_at, reason FROM memory_tombstones "
            "WHERE project = ? AND key_sha256 = ? ORDER BY version",
            (project, key_sha256),
        )
        return [TombstoneRow(*row) for row in await cursor.fetchall()]
