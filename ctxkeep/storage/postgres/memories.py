"""Queries over long-term memories (immutable versions per key), their postings and their tombstones.

A forgotten memory's rows and postings are deleted and rewriting their tables is owed (`maintenance`), so no copy of
its text stays in the database's files."""

from __future__ import annotations

from collections.abc import Sequence

from ctxkeep.storage.postgres import index
from ctxkeep.storage.postgres.index import MEMORY_POSTINGS, TermKey
from ctxkeep.storage.postgres.maintenance import Maintenance
from ctxkeep.storage.postgres.session import Session, object_lock
from ctxkeep.storage.rows import MemoryRow, TombstoneRow

_FIELDS = (
    "memory_id",
    "key",
    "key_match",
    "kind",
    "content",
    "confidence",
    "source_json",
    "version",
    "created_at",
    "effective_at",
    "expires_at",
)
_COLUMNS = "m.id, " + ", ".join(f"m.{name}" for name in _FIELDS)
_TOMBSTONE = "t.memory_id, t.key_sha256, t.kind, t.version, t.created_at, t.forgotten_at, t.reason"


class Memories:
    def __init__(self, session: Session, key: TermKey, maintenance: Maintenance) -> None:
        self._s = session
        self._key = key
        self._maintenance = maintenance

    async def lock(self, project: str, key_match: str) -> None:
        """Make this write the only writer of the key's versions until it commits (other keys never wait)."""
        await self._s.lock("memory", project, key_match)

    async def versions(self, project: str, key_matches: Sequence[str]) -> list[MemoryRow]:
        conn = await self._s.begun()
        rows = await conn.fetch(
            f"SELECT {_COLUMNS} FROM memories m WHERE m.project = $1 AND m.key_match = ANY($2::text[]) "
            "ORDER BY m.key_match, m.version",
            project,
            sorted(set(key_matches)),
        )
        return [MemoryRow(*row) for row in rows]

    async def by_ids(self, project: str, memory_ids: Sequence[str]) -> list[MemoryRow]:
        conn = await self._s.begun()
        rows = await conn.fetch(
            f"SELECT {_COLUMNS} FROM memories m WHERE m.project = $1 AND m.memory_id = ANY($2::text[]) ORDER BY m.id",
            project,
            sorted(set(memory_ids)),
        )
        return [MemoryRow(*row) for row in rows]

    async def keys(self, project: str, kind: str | None, limit: int) -> list[str]:
        conn = await self._s.begun()
        rows = await conn.fetch(
            "SELECT key_match FROM memories WHERE project = $1 AND ($2::text IS NULL OR kind = $2::text) "
            "GROUP BY key_match ORDER BY MAX(id) DESC LIMIT $3",
            project,
            kind,
            limit,
        )
        return [str(row[0]) for row in rows]

    async def matching(self, project: str, terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
        """(key, best BM25 score > 0, over the project's memories only) of the keys whose versions hold any of the
        terms, best first."""
        project_id = await self._s.project_id(project)
        if project_id is None or not terms:
            return []
        conn = await self._s.begun()
        weighed = await index.weights(
            conn, MEMORY_POSTINGS, project_id, [self._key.term(t) for t in terms], self._s.folds
        )
        if weighed is None:
            return []
        keyed, idfs, avgdl = weighed
        rows = await conn.fetch(
            f"SELECT m.key_match, MAX(s.score) AS best FROM (SELECT t.memory_id AS id, {index.score('$4', 'm.index_length')} "
            f"AS score FROM {index.scored(MEMORY_POSTINGS, '$1', '$2', '$3')} JOIN memories m ON m.id = t.memory_id "
            "GROUP BY t.memory_id) s JOIN memories m ON m.id = s.id WHERE m.project = $5 "
            "GROUP BY m.key_match ORDER BY round(MAX(s.score)::numeric, 9) DESC, m.key_match LIMIT $6",
            project_id,
            keyed,
            idfs,
            avgdl,
            project,
            limit,
        )
        # 12 significant digits: a score summed in any row order is the same score
        return [(str(row[0]), float(f"{float(row[1]):.12g}")) for row in rows]

    async def next_version(self, project: str, key_match: str, key_sha256: str) -> int:
        conn = await self._s.begun()
        value = await conn.fetchval(
            "SELECT MAX(v) FROM (SELECT MAX(version) AS v FROM memories WHERE project = $1 AND key_match = $2 "
            "UNION ALL SELECT MAX(version) FROM memory_tombstones WHERE project = $1 AND key_sha256 = $3) versions",
            project,
            key_match,
            key_sha256,
        )
        return int(value or 0) + 1

    async def insert_next(self, project: str, row: MemoryRow, terms: str, key_sha256: str) -> MemoryRow | None:
        """Store `row` as its key's next version when `row.version` still is (one more than any version ever
        stored, forgotten ones included), with its postings; None, with nothing written, when another write took it.
        One statement (`ctxkeep_remember`, migration 11) holding the key, run on its own when first in its
        transaction, so the key is held only while PostgreSQL runs it."""
        counts, length = self._key.counts(terms)  # before anything is held
        project_id = await self._s.project_id(project, create=True)
        assert project_id is not None
        new_id = await self._s.holding(
            "memory",
            project,
            row.key_match,
            self._s.sole(
                "SELECT ctxkeep_remember($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, "
                "$18)",
                object_lock("memory", project, row.key_match),
                project,
                project_id,
                key_sha256,
                *(getattr(row, name) for name in _FIELDS),
                length,
                list(counts),
                list(counts.values()),
            ),
        )
        if new_id is None:
            return None
        self._s.folds.appended(MEMORY_POSTINGS, project_id)
        return MemoryRow(int(new_id), *list(row.__dict__.values())[1:])

    async def insert(self, project: str, row: MemoryRow, terms: str) -> MemoryRow:
        conn = await self._s.begun()
        counts, length = self._key.counts(terms)
        new_id = await conn.fetchval(
            f"INSERT INTO memories (project, {', '.join(_FIELDS)}, index_length) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, "
            "$10, $11, $12, $13) RETURNING id",
            project,
            *(getattr(row, name) for name in _FIELDS),
            length,
        )
        stored = MemoryRow(int(new_id), *list(row.__dict__.values())[1:])
        project_id = await self._s.project_id(project, create=True)
        assert project_id is not None
        await index.add(conn, MEMORY_POSTINGS, project_id, [(stored.id, counts, length)], self._s.folds)
        return stored

    async def delete(
        self, project: str, rows: Sequence[tuple[MemoryRow, str]], tombstones: Sequence[TombstoneRow]
    ) -> None:
        """Remove memories (each with its indexed terms) and their postings, leave tombstones; rewriting the tables
        that held them is owed."""
        conn = await self._s.begun()
        project_id = await self._s.project_id(project)
        for row, terms in rows:
            length = await conn.fetchval(
                "DELETE FROM memories WHERE id = $1 AND project = $2 RETURNING index_length", row.id, project
            )
            if project_id is not None and length is not None:
                counts, _ = self._key.counts(terms)
                await index.remove(conn, MEMORY_POSTINGS, project_id, row.id, list(counts), int(length), self._s.folds)
        await self._maintenance.owe_vacuum("memories", "memory_terms")
        await conn.executemany(
            "INSERT INTO memory_tombstones (project, memory_id, key_sha256, kind, version, created_at, forgotten_at, reason) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            [
                (project, t.memory_id, t.key_sha256, t.kind, t.version, t.created_at, t.forgotten_at, t.reason)
                for t in tombstones
            ],
        )

    async def tombstones(self, project: str, memory_ids: Sequence[str]) -> list[TombstoneRow]:
        conn = await self._s.begun()
        rows = await conn.fetch(
            f"SELECT {_TOMBSTONE} FROM memory_tombstones t WHERE t.project = $1 "
            "AND t.memory_id = ANY($2::text[]) ORDER BY t.memory_id",
            project,
            sorted(set(memory_ids)),
        )
        return [TombstoneRow(*row) for row in rows]

    async def tombstones_of_key(self, project: str, key_sha256: str) -> list[TombstoneRow]:
        conn = await self._s.begun()
        rows = await conn.fetch(
            f"SELECT {_TOMBSTONE} FROM memory_tombstones t WHERE t.project = $1 AND t.key_sha256 = $2 "
            "ORDER BY t.version",
            project,
            key_sha256,
        )
        return [TombstoneRow(*row) for row in rows]
