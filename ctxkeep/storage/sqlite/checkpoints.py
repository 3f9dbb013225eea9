"""Queries over tasks and their immutable checkpoint versions, always scoped by project."""

from __future__ import annotations

import aiosqlite

from ctxkeep.storage.rows import CheckpointRow, TaskRow

_CHECKPOINT_COLUMNS = (
    "task_id, version, hash, parent_hash, state_json, state_schema, trigger, goal_change_reason, "
    "violations_json, created_at, author, owner, took_over"
)


class Checkpoints:
    """Checkpoint and task rows of one connection (inside a Store transaction)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def lock(self, project: str, task_id: str) -> None:
        """Nothing to take: a write transaction (BEGIN IMMEDIATE) is the file's only writer already."""

    async def latest_version(self, project: str, task_id: str) -> int:
        """The task's newest version, 0 when the task does not exist."""
        cursor = await self._conn.execute(
            "SELECT latest_version FROM tasks WHERE project = ? AND task_id = ?", (project, task_id)
        )
        row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def get(self, project: str, task_id: str, version: int | None = None) -> tuple[CheckpointRow, int] | None:
        """A version (the latest when None) and the task's latest version number, in one query."""
        columns = ", ".join(f"c.{name.strip()}" for name in _CHECKPOINT_COLUMNS.split(","))
        cursor = await self._conn.execute(
            f"SELECT {columns}, t.latest_version FROM tasks t JOIN checkpoints c ON c.project = t.project "
            "AND c.task_id = t.task_id AND c.version = COALESCE(?, t.latest_version) "
            "WHERE t.project = ? AND t.task_id = ?",
            (version, project, task_id),
        )
        row = await cursor.fetchone()
        return (CheckpointRow(*row[:-1]), int(row[-1])) if row else None

    async def chain(self, project: str, task_id: str, first: int = 1, last: int | None = None) -> list[CheckpointRow]:
        """The versions first..last (all by default) of a task, oldest first."""
        cursor = await self._conn.execute(
            f"SELECT {_CHECKPOINT_COLUMNS} FROM checkpoints WHERE project = ? AND task_id = ? AND version >= ? "
            "AND (? IS NULL OR version <= ?) ORDER BY version",
            (project, task_id, first, last, last),
        )
        return [CheckpointRow(*row) for row in await cursor.fetchall()]

    async def insert(self, project: str, row: CheckpointRow) -> None:
        """Store a new version and make it the task's latest (creating the task at version 1)."""
        await self._conn.execute(
            "INSERT INTO tasks (project, task_id, latest_version, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (project, task_id) DO UPDATE SET latest_version = excluded.latest_version, "
            "updated_at = excluded.updated_at",
            (project, row.task_id, row.version, row.created_at, row.created_at),
        )
        await self._conn.execute(
            f"INSERT INTO checkpoints (project, {_CHECKPOINT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
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
            ),
        )

    async def tasks(self, project: str, limit: int, after: tuple[str, str] | None = None) -> list[TaskRow]:
        """The project's tasks with their latest state, most recently updated first (ties by task id); with `after`
        (the updated_at and task id of the last task of a page), the tasks after it."""
        since, task = after or ("\uffff", "")
        cursor = await self._conn.execute(
            "SELECT t.task_id, t.latest_version, t.created_at, t.updated_at, c.state_json "
            "FROM tasks t JOIN checkpoints c ON c.project = t.project AND c.task_id = t.task_id "
            "AND c.version = t.latest_version WHERE t.project = ? AND (t.updated_at < ? OR (t.updated_at = ? AND t.task_id > ?)) "
            "ORDER BY t.updated_at DESC, t.task_id LIMIT ?",
            (project, since, since, task, limit),
        )
        return [TaskRow(*row) for row in await cursor.fetchall()]

    async def task_ids(self, project: str, prefix: str, limit: int) -> tuple[list[str], int]:
        """Up to `limit` task ids of the project starting with `prefix` (casefolded both), most recently updated first,
        and how many match in all."""
        where = "project = ? AND substr(ctxkeep_casefold(task_id), 1, ?) = ?"
        folded = prefix.casefold()
        params = (project, len(folded), folded)
        cursor = await self._conn.execute(
            f"SELECT task_id FROM tasks WHERE {where} ORDER BY updated_at DESC, task_id LIMIT ?", (*params, limit)
        )
        ids = [row[0] for row in await cursor.fetchall()]
        if len(ids) < limit:
            return ids, len(ids)
        cursor = await self._conn.execute(f"SELECT count(*) FROM tasks WHERE {where}", params)
        row = await cursor.fetchone()
        return ids, int(row[0]) if row else len(ids)

    async def quoting(self, project: str, needle: str, limit: int) -> list[tuple[str, int]]:
        """(task_id, version) of the versions whose state JSON contains `needle` verbatim."""
        cursor = await self._conn.execute(
            "SELECT task_id, version FROM checkpoints WHERE project = ? AND instr(state_json, ?) > 0 "
            "ORDER BY task_id, version LIMIT ?",
            (project, needle, limit),
        )
        return [(row[0], int(row[1])) for row in await cursor.fetchall()]
