"""Counts of what a project holds, for `ctxkeep stats`."""

from __future__ import annotations

import aiosqlite

# (name, query over one project); every query takes the project once
_COUNTS: list[tuple[str, str]] = [
    ("tasks", "SELECT count(*) FROM tasks WHERE project = ?"),
    ("checkpoint versions", "SELECT count(*) FROM checkpoints WHERE project = ?"),
    ("evidence records", "SELECT count(*) FROM evidence WHERE project = ?"),
    ("evidence bytes (before compression)", "SELECT COALESCE(sum(bytes), 0) FROM evidence WHERE project = ?"),
    ("memories (all versions)", "SELECT count(*) FROM memories WHERE project = ?"),
    ("memories forgotten (tombstones)", "SELECT count(*) FROM memory_tombstones WHERE project = ?"),
    ("side effects journaled", "SELECT count(*) FROM actions WHERE project = ?"),
    ("side effects without a result", "SELECT count(*) FROM actions WHERE project = ? AND status = 'open'"),
    ("history digests", "SELECT count(*) FROM task_digests WHERE project = ?"),
    ("Claude Code sessions", "SELECT count(*) FROM sessions WHERE project = ?"),
]


class Stats:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def counts(self, project: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for name, query in _COUNTS:
            cursor = await self._conn.execute(query, (project,))
            row = await cursor.fetchone()
            found[name] = int(row[0]) if row else 0
        return found

    async def file_bytes(self) -> int:
        """The database's size in pages (all projects)."""
        cursor = await self._conn.execute("SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()")
        row = await cursor.fetchone()
        return int(row[0]) if row else 0
