"""SQLite's dialect of the shared tables (`ctxkeep.storage.sql`): no lock to take (a write transaction is the file's
only writer), the casefolded task id through the `ctxkeep_casefold` function, instr, json_each, and the file's pages."""

from __future__ import annotations

from ctxkeep.storage.rows import CheckpointRow
from ctxkeep.storage.sql import checkpoints as shared
from ctxkeep.storage.sql import stats, working_sets


class Checkpoints(shared.Checkpoints):
    FOLDED_TASK_ID = "ctxkeep_casefold(task_id)"
    HOLDS = "instr(state_json, ?) > 0"

    async def lock(self, project: str, task_id: str) -> None:
        """Nothing to take: a write transaction (BEGIN IMMEDIATE) is the file's only writer already."""

    async def insert(self, project: str, row: CheckpointRow) -> None:
        """Store a new version and make it the task's latest (creating the task at version 1)."""
        await self._db.execute(
            "INSERT INTO tasks (project, task_id, latest_version, created_at, updated_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (project, task_id) DO UPDATE SET latest_version = excluded.latest_version, "
            "updated_at = excluded.updated_at",
            project,
            row.task_id,
            row.version,
            row.created_at,
            row.created_at,
        )
        await self._db.execute(shared.INSERT_VERSION, *shared.values(project, row))


class WorkingSets(working_sets.WorkingSets):
    SHOWS_ANY = (
        "EXISTS (SELECT 1 FROM json_each(memories_json) shown JOIN json_each(?) gone ON gone.value = shown.value)"
    )


class Stats(stats.Stats):
    SIZE = "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()"
