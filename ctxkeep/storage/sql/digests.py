"""The latest history digest (and accepted summary) of each task, and the cursor of each compressed source."""

from __future__ import annotations

from ctxkeep.storage.rows import CursorRow, DigestRow
from ctxkeep.storage.sql.db import Db

_COLUMNS = "task_id, digest, summary, source, updated_at, imported_from"


class Digests:
    def __init__(self, db: Db) -> None:
        self._db = db

    async def put(self, project: str, row: DigestRow) -> None:
        """Store a task's digest; a new digest without a summary keeps the summary of the same source (and the same
        bundle, or none)."""
        await self._db.execute(
            "INSERT INTO task_digests (project, task_id, digest, summary, source, updated_at, imported_from) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (project, task_id) DO UPDATE SET digest = excluded.digest, source = excluded.source, "
            "updated_at = excluded.updated_at, imported_from = excluded.imported_from, summary = COALESCE(excluded.summary, "
            "CASE WHEN task_digests.source = excluded.source AND (task_digests.imported_from = excluded.imported_from "
            "OR (task_digests.imported_from IS NULL AND excluded.imported_from IS NULL)) THEN task_digests.summary END)",
            project,
            row.task_id,
            row.digest,
            row.summary,
            row.source,
            row.updated_at,
            row.imported_from,
        )

    async def get(self, project: str, task_id: str) -> DigestRow | None:
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM task_digests WHERE project = ? AND task_id = ?", project, task_id
        )
        return DigestRow(*row) if row else None

    async def all(self, project: str) -> list[DigestRow]:
        rows = await self._db.fetch(f"SELECT {_COLUMNS} FROM task_digests WHERE project = ? ORDER BY task_id", project)
        return [DigestRow(*row) for row in rows]

    async def rewrite(self, project: str, row: DigestRow) -> bool:
        """Replace a task's digest and summary text as given (nothing merged), when it is still the one of
        `row.updated_at`; False when another write replaced it meanwhile. The old text is owed a rewrite."""
        changed = await self._db.execute(
            "UPDATE task_digests SET digest = ?, summary = ? WHERE project = ? AND task_id = ? AND updated_at = ?",
            row.digest,
            row.summary,
            project,
            row.task_id,
            row.updated_at,
        )
        await self._db.owe_vacuum("task_digests")
        return changed == 1


class Cursors:
    def __init__(self, db: Db) -> None:
        self._db = db

    async def put(self, project: str, row: CursorRow) -> None:
        await self._db.execute(
            "INSERT INTO compress_cursors (project, source, prefix_count, prefix_hash, refs_json, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (project, source) DO UPDATE SET prefix_count = excluded.prefix_count, "
            "prefix_hash = excluded.prefix_hash, refs_json = excluded.refs_json, updated_at = excluded.updated_at",
            project,
            row.source,
            row.prefix_count,
            row.prefix_hash,
            row.refs_json,
            row.updated_at,
        )

    async def get(self, project: str, source: str) -> CursorRow | None:
        row = await self._db.fetchrow(
            "SELECT source, prefix_count, prefix_hash, refs_json, updated_at FROM compress_cursors "
            "WHERE project = ? AND source = ?",
            project,
            source,
        )
        return CursorRow(*row) if row else None
