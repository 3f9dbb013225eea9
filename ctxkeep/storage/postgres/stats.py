"""Counts of what a project holds, for `ctxkeep stats`."""

from __future__ import annotations

from ctxkeep.storage.postgres.session import Session

_COUNTS: list[tuple[str, str]] = [
    ("tasks", "SELECT count(*) FROM tasks WHERE project = $1"),
    ("checkpoint versions", "SELECT count(*) FROM checkpoints WHERE project = $1"),
    ("evidence records", "SELECT count(*) FROM evidence WHERE project = $1"),
    ("evidence bytes (before compression)", "SELECT COALESCE(sum(bytes), 0) FROM evidence WHERE project = $1"),
    ("memories (all versions)", "SELECT count(*) FROM memories WHERE project = $1"),
    ("memories forgotten (tombstones)", "SELECT count(*) FROM memory_tombstones WHERE project = $1"),
    ("side effects journaled", "SELECT count(*) FROM actions WHERE project = $1"),
    ("side effects without a result", "SELECT count(*) FROM actions WHERE project = $1 AND status = 'open'"),
    ("history digests", "SELECT count(*) FROM task_digests WHERE project = $1"),
    ("Claude Code sessions", "SELECT count(*) FROM sessions WHERE project = $1"),
]


class Stats:
    def __init__(self, session: Session) -> None:
        self._s = session

    async def counts(self, project: str) -> dict[str, int]:
        conn = await self._s.begun()
        return {name: int(await conn.fetchval(query, project) or 0) for name, query in _COUNTS}

    async def file_bytes(self) -> int:
        """The size of ctxkeep's tables in the schema (all projects), indexes and TOAST included."""
        value = await (await self._s.begun()).fetchval(
            "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
        )
        return int(value or 0)
