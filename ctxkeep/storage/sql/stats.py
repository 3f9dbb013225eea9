"""Counts of what a project holds, for `ctxkeep stats`; the database's size is each store's own (`file_bytes`)."""

from __future__ import annotations

from ctxkeep.storage.sql.db import Db

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
    """The shared counts; a store's subclass names the query of its size."""

    SIZE: str  # the database's size in bytes (all projects), as one query without parameters

    def __init__(self, db: Db) -> None:
        self._db = db

    async def counts(self, project: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for name, query in _COUNTS:
            row = await self._db.fetchrow(query, project)
            found[name] = int(row[0] or 0) if row else 0
        return found

    async def file_bytes(self) -> int:
        """The database's size in bytes (all projects)."""
        row = await self._db.fetchrow(self.SIZE)
        return int(row[0] or 0) if row else 0
