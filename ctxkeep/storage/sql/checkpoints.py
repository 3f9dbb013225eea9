"""Tasks and their immutable checkpoint versions, always scoped by project. Each store adds what its dialect says
differently: the task's lock, the casefolded task id (a column on PostgreSQL, a function on SQLite) and a substring
search of the stored states."""

from __future__ import annotations

from abc import ABC, abstractmethod

from ctxkeep.storage.rows import CheckpointRow, LeaseRow, TaskRow
from ctxkeep.storage.sql.db import Db

COLUMNS = (
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
_LIST = ", ".join(COLUMNS)


def values(project: str, row: CheckpointRow) -> list[object]:
    """The values of a version's row, in `project, *COLUMNS` order."""
    return [project, *(getattr(row, name) for name in COLUMNS)]


INSERT_VERSION = f"INSERT INTO checkpoints (project, {_LIST}) VALUES ({', '.join('?' * (len(COLUMNS) + 1))})"


class Checkpoints(ABC):
    """The shared queries; a store's subclass names its dialect's expressions and adds its lock and insert."""

    FOLDED_TASK_ID: str  # the casefolded task id, as an SQL expression over `tasks`
    HOLDS: str  # "<text> holds <?>", as an SQL condition over `checkpoints.state_json` and one placeholder

    def __init__(self, db: Db) -> None:
        self._db = db

    @abstractmethod
    async def lock(self, project: str, task_id: str) -> None:
        """Make this write the only writer of the task's chain and lease until it ends."""

    @abstractmethod
    async def insert(self, project: str, row: CheckpointRow) -> None:
        """Store a new version and make it the task's latest (creating the task at version 1)."""

    async def task_ids(self, project: str, prefix: str, limit: int) -> tuple[list[str], int]:
        """Up to `limit` task ids of the project starting with `prefix` (casefolded both), most recently updated first,
        and how many match in all."""
        folded = prefix.casefold()
        where = f"project = ? AND substr({self.FOLDED_TASK_ID}, 1, ?) = ?"
        rows = await self._db.fetch(
            f"SELECT task_id FROM tasks WHERE {where} ORDER BY updated_at DESC, task_id LIMIT ?",
            project,
            len(folded),
            folded,
            limit,
        )
        ids = [str(row[0]) for row in rows]
        if len(ids) < limit:
            return ids, len(ids)
        found = await self._db.fetchrow(f"SELECT count(*) FROM tasks WHERE {where}", project, len(folded), folded)
        return ids, int(found[0]) if found else len(ids)

    async def quoting(self, project: str, needle: str, limit: int) -> list[tuple[str, int]]:
        """(task_id, version) of the versions whose state JSON contains `needle` verbatim."""
        rows = await self._db.fetch(
            f"SELECT task_id, version FROM checkpoints WHERE project = ? AND {self.HOLDS} "
            "ORDER BY task_id, version LIMIT ?",
            project,
            needle,
            limit,
        )
        return [(str(row[0]), int(row[1])) for row in rows]

    async def latest_version(self, project: str, task_id: str) -> int:
        """The task's newest version, 0 when the task does not exist."""
        row = await self._db.fetchrow(
            "SELECT latest_version FROM tasks WHERE project = ? AND task_id = ?", project, task_id
        )
        return int(row[0]) if row else 0

    async def append(
        self,
        project: str,
        task_id: str,
        expected: int,
        seen: LeaseRow | None,
        lease: LeaseRow | None,
        release: str | None,
        row: CheckpointRow | None,
    ) -> bool:
        """A save's conditional write, alone in its write transaction: holding the task, when it is still at version
        `expected` with the lease `seen`, write `lease` (or release `release`'s lease) and append `row` (None: no new
        version); False, with nothing written, when another write came first."""
        await self.lock(project, task_id)
        if await self.head(project, task_id) != (expected, seen):
            return False
        if lease is not None:
            await self._db.execute(
                "INSERT INTO task_leases (project, task_id, owner, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?) "
                "ON CONFLICT (project, task_id) DO UPDATE SET owner = excluded.owner, "
                "acquired_at = excluded.acquired_at, expires_at = excluded.expires_at",
                project,
                task_id,
                lease.owner,
                lease.acquired_at,
                lease.expires_at,
            )
        elif release is not None:
            await self._db.execute(
                "DELETE FROM task_leases WHERE project = ? AND task_id = ? AND owner = ?", project, task_id, release
            )
        if row is not None:
            await self.insert(project, row)
        return True

    async def head(self, project: str, task_id: str) -> tuple[int, LeaseRow | None]:
        """The task's latest version (0 when it does not exist) and its lease, in one query (what a save holding the
        task checks before it appends)."""
        row = await self._db.fetchrow(
            "SELECT COALESCE((SELECT latest_version FROM tasks WHERE project = ? AND task_id = ?), 0), l.task_id, "
            "l.owner, l.acquired_at, l.expires_at FROM (SELECT 1 AS one) AS one LEFT JOIN task_leases l "
            "ON l.project = ? AND l.task_id = ?",
            project,
            task_id,
            project,
            task_id,
        )
        assert row is not None
        return int(row[0]), LeaseRow(*list(row)[1:]) if row[1] is not None else None

    async def get(self, project: str, task_id: str, version: int | None = None) -> tuple[CheckpointRow, int] | None:
        """A version (the latest when None) and the task's latest version number, in one query."""
        row = await self._db.fetchrow(
            f"SELECT {', '.join(f'c.{name}' for name in COLUMNS)}, t.latest_version FROM tasks t JOIN checkpoints c "
            "ON c.project = t.project AND c.task_id = t.task_id AND c.version = COALESCE(CAST(? AS INTEGER), "
            "t.latest_version) WHERE t.project = ? AND t.task_id = ?",
            version,
            project,
            task_id,
        )
        return (CheckpointRow(*list(row)[:-1]), int(row[-1])) if row else None

    async def chain(self, project: str, task_id: str, first: int = 1, last: int | None = None) -> list[CheckpointRow]:
        """The versions first..last (all by default) of a task, oldest first."""
        rows = await self._db.fetch(
            f"SELECT {_LIST} FROM checkpoints WHERE project = ? AND task_id = ? AND version >= ? "
            "AND (CAST(? AS INTEGER) IS NULL OR version <= ?) ORDER BY version",
            project,
            task_id,
            first,
            last,
            last,
        )
        return [CheckpointRow(*row) for row in rows]

    async def tasks(self, project: str, limit: int, after: tuple[str, str] | None = None) -> list[TaskRow]:
        """The project's tasks with their latest state, most recently updated first (ties by task id); with `after`
        (the updated_at and task id of the last task of a page), the tasks after it."""
        since, task = after or ("\uffff", "")
        rows = await self._db.fetch(
            "SELECT t.task_id, t.latest_version, t.created_at, t.updated_at, c.state_json "
            "FROM tasks t JOIN checkpoints c ON c.project = t.project AND c.task_id = t.task_id "
            "AND c.version = t.latest_version WHERE t.project = ? AND (t.updated_at < ? OR (t.updated_at = ? "
            "AND t.task_id > ?)) ORDER BY t.updated_at DESC, t.task_id LIMIT ?",
            project,
            since,
            since,
            task,
            limit,
        )
        return [TaskRow(*row) for row in rows]
