"""The latest history digest (and accepted summary) of each task."""

from __future__ import annotations

from dataclasses import dataclass

import aiosqlite


@dataclass(frozen=True)
class DigestRow:
    task_id: str
    digest: str
    summary: str | None
    source: str
    updated_at: str


class Digests:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def put(self, project: str, row: DigestRow) -> None:
        """Store a task's digest; a new digest without a summary keeps the summary of the same source."""
        await self._conn.execute(
            "INSERT INTO task_digests (project, task_id, digest, summary, source, updated_at) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (project, task_id) DO UPDATE SET digest = excluded.digest, source = excluded.source, "
            "updated_at = excluded.updated_at, summary = COALESCE(excluded.summary, "
            "CASE WHEN task_digests.source = excluded.source THEN task_digests.summary END)",
            (project, row.task_id, row.digest, row.summary, row.source, row.updated_at),
        )

    async def get(self, project: str, task_id: str) -> DigestRow | None:
        cursor = await self._conn.execute(
            "SELECT task_id, digest, summary, source, updated_at FROM task_digests WHERE project = ? AND task_id = ?",
            (project, task_id),
        )
        row = await cursor.fetchone()
        return DigestRow(*row) if row else None
