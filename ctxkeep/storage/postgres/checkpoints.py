"""Queries over tasks and their immutable checkpoint versions, always scoped by project."""

from __future__ import annotations

from ctxkeep.storage.postgres.session import Session
from ctxkeep.storage.rows import CheckpointRow, TaskRow

_COLUMNS = (
    "task_id",
    "version",
    "hash",
    "parent_hash",
    "state_json",
    "state_schema",
    "trigger",
    "goal_change_reason",
    "violations_json",
    "created_at",
    "author",
    "owner",
    "took_over",
)
_CHECKPOINT_COLUMNS = ", ".join(_COLUMNS)


class Checkpoints:
    def __init__(self, session: Session) -> None:
        self._s = session

    async def lock(self, project: str, task_id: str) -> None:
        """Make this write the only writer of the task's chain and lease until it commits (other tasks never wait)."""
        await self._s.lock("task", project, task_id)

    async def latest_version(self, project: str, task_id: str) -> int:
        conn = await self._s.begun()
        value = await conn.fetchval(
            "SELECT latest_version FROM tasks WHERE project = $1 AND task_id = $2", project, task_id
        )
        return int(value) if value is not None else 0

    async def get(self, project: str, task_id: str, version: int | None = None) -> tuple[CheckpointRow, int] | None:
        conn = await self._s.begun()
        columns = ", ".join(f"c.{name}" for name in _COLUMNS)
        row = await conn.fetchrow(
            f"SELECT {columns}, t.latest_version FROM tasks t JOIN checkpoints c ON c.project = t.project "
            "AND c.task_id = t.task_id AND c.version = COALESCE($1::integer, t.latest_version) "
            "WHERE t.project = $2 AND t.task_id = $3",
            version,
            project,
            task_id,
        )
        return (CheckpointRow(*list(row)[:-1]), int(row[-1])) if row else None

    async def chain(self, project: str, task_id: str, first: int = 1, last: int | None = None) -> list[CheckpointRow]:
        conn = await self._s.begun()
        rows = await conn.fetch(
            f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE project = $1 AND task_id = $2 AND version >= $3 "
            "AND ($4::integer IS NULL OR version <= $4::integer) ORDER BY version",
            project,
            task_id,
            first,
            last,
        )
        return [CheckpointRow(*row) for row in rows]

    async def insert(self, project: str, row: CheckpointRow) -> None:
        conn = await self._s.begun()
        await conn.execute(
            "INSERT INTO tasks (project, task_id, latest_version, created_at, updated_at, folded) VALUES ($1, $2, $3, $4, $4, $5) "
            "ON CONFLICT (project, task_id) DO UPDATE SET latest_version = excluded.latest_version, updated_at = excluded.updated_at",
            project,
            row.task_id,
            row.version,
            row.created_at,
            row.task_id.casefold(),
        )
        await conn.execute(
            f"INSERT INTO checkpoints (project, {_CHECKPOINT_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)",
            project,
            row.task_id,
            row.version,
            row.hash,
            row.parent_hash,
            row.state_json,
            row.state_schema,
            row.trigger,
            row.goal_change_reason,
            row.violations_json,
            row.created_at,
            row.author,
            row.owner,
            row.took_over,
        )

    async def tasks(self, project: str, limit: int, after: tuple[str, str] | None = None) -> list[TaskRow]:
        conn = await self._s.begun()
        since, task = after or ("\uffff", "")
        rows = await conn.fetch(
            "SELECT t.task_id, t.latest_version, t.created_at, t.updated_at, c.state_json "
            "FROM tasks t JOIN checkpoints c ON c.project = t.project AND c.task_id = t.task_id AND c.version = t.latest_version "
            "WHERE t.project = $1 AND (t.updated_at < $2 OR (t.updated_at = $2 AND t.task_id > $3)) "
            "ORDER BY t.updated_at DESC, t.task_id LIMIT $4",
            project,
            since,
            task,
            limit,
        )
        return [TaskRow(*row) for row in rows]

    async def task_ids(self, project: str, prefix: str, limit: int) -> tuple[list[str], int]:
        conn = await self._s.begun()
        folded = prefix.casefold()
        where = "project = $1 AND substr(folded, 1, $2) = $3"
        rows = await conn.fetch(
            f"SELECT task_id FROM tasks WHERE {where} ORDER BY updated_at DESC, task_id LIMIT $4",
            project,
            len(folded),
            folded,
            limit,
        )
        ids = [str(row[0]) for row in rows]
        if len(ids) < limit:
            return ids, len(ids)
        return ids, int(await conn.fetchval(f"SELECT count(*) FROM tasks WHERE {where}", project, len(folded), folded))

    async def quoting(self, project: str, needle: str, limit: int) -> list[tuple[str, int]]:
        conn = await self._s.begun()
        rows = await conn.fetch(
            "SELECT task_id, version FROM checkpoints WHERE project = $1 AND strpos(state_json, $2) > 0 "
            "ORDER BY task_id, version LIMIT $3",
            project,
            needle,
            limit,
        )
        return [(str(row[0]), int(row[1])) for row in rows]
