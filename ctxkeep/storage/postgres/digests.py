"""The latest history digest (and accepted summary) of each task, and the cursor of each compressed source."""

from __future__ import annotations

from ctxkeep.storage.postgres.maintenance import Maintenance
from ctxkeep.storage.postgres.session import Session
from ctxkeep.storage.rows import CursorRow, DigestRow


class Digests:
    def __init__(self, session: Session, maintenance: Maintenance) -> None:
        self._s = session
        self._maintenance = maintenance

    async def put(self, project: str, row: DigestRow) -> None:
        conn = await self._s.of(project)
        await conn.execute(
            "INSERT INTO task_digests (project, task_id, digest, summary, source, updated_at, imported_from) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7) "
            "ON CONFLICT (project, task_id) DO UPDATE SET digest = excluded.digest, source = excluded.source, "
            "updated_at = excluded.updated_at, imported_from = excluded.imported_from, summary = COALESCE(excluded.summary, "
            "CASE WHEN task_digests.source = excluded.source AND task_digests.imported_from IS NOT DISTINCT FROM "
            "excluded.imported_from THEN task_digests.summary END)",
            project,
            row.task_id,
            row.digest,
            row.summary,
            row.source,
            row.updated_at,
            row.imported_from,
        )

    async def get(self, project: str, task_id: str) -> DigestRow | None:
        conn = await self._s.of(project)
        row = await conn.fetchrow(
            "SELECT task_id, digest, summary, source, updated_at, imported_from FROM task_digests WHERE project = $1 AND task_id = $2",
            project,
            task_id,
        )
        return DigestRow(*row) if row else None

    async def all(self, project: str) -> list[DigestRow]:
        conn = await self._s.of(project)
        rows = await conn.fetch(
            "SELECT task_id, digest, summary, source, updated_at, imported_from FROM task_digests WHERE project = $1 ORDER BY task_id",
            project,
        )
        return [DigestRow(*row) for row in rows]

    async def rewrite(self, project: str, row: DigestRow) -> None:
        """Replace a task's digest and summary text as given; the old row's bytes are owed a rewrite of the table."""
        conn = await self._s.of(project)
        await conn.execute(
            "UPDATE task_digests SET digest = $1, summary = $2 WHERE project = $3 AND task_id = $4",
            row.digest,
            row.summary,
            project,
            row.task_id,
        )
        await self._maintenance.owe_vacuum("task_digests")


class Cursors:
    def __init__(self, session: Session) -> None:
        self._s = session

    async def put(self, project: str, row: CursorRow) -> None:
        conn = await self._s.of(project)
        await conn.execute(
            "INSERT INTO compress_cursors (project, source, prefix_count, prefix_hash, refs_json, updated_at) "
            "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (project, source) DO UPDATE SET prefix_count = excluded.prefix_count, "
            "prefix_hash = excluded.prefix_hash, refs_json = excluded.refs_json, updated_at = excluded.updated_at",
            project,
            row.source,
            row.prefix_count,
            row.prefix_hash,
            row.refs_json,
            row.updated_at,
        )

    async def get(self, project: str, source: str) -> CursorRow | None:
        conn = await self._s.of(project)
        row = await conn.fetchrow(
            "SELECT source, prefix_count, prefix_hash, refs_json, updated_at FROM compress_cursors "
            "WHERE project = $1 AND source = $2",
            project,
            source,
        )
        return CursorRow(*row) if row else None
