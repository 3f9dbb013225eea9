"""PostgreSQL's dialect of the shared tables (`ctxkeep.storage.sql`): the task's advisory lock, the casefolded task
id kept in a column, strpos, jsonb, and the size of the schema's relations."""

from __future__ import annotations

from ctxkeep.storage.postgres.session import Session
from ctxkeep.storage.postgres.statements import PostgresDb
from ctxkeep.storage.rows import CheckpointRow
from ctxkeep.storage.sql import checkpoints as shared
from ctxkeep.storage.sql import stats, working_sets


class Checkpoints(shared.Checkpoints):
    FOLDED_TASK_ID = "folded"
    HOLDS = "strpos(state_json, ?) > 0"

    def __init__(self, db: PostgresDb, session: Session) -> None:
        super().__init__(db)
        self._s = session

    async def lock(self, project: str, task_id: str) -> None:
        """Make this write the only writer of the task's chain and lease until it commits (other tasks never wait)."""
        await self._s.lock("task", project, task_id)

    async def insert(self, project: str, row: CheckpointRow) -> None:
        """Store a new version and make it the task's latest (creating the task at version 1)."""
        await self._db.execute(  # one statement, one round trip while the task is held
            "WITH task AS (INSERT INTO tasks (project, task_id, latest_version, created_at, updated_at, folded) "
            "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (project, task_id) DO UPDATE SET "
            f"latest_version = excluded.latest_version, updated_at = excluded.updated_at RETURNING 1) {shared.INSERT_VERSION}",
            project,
            row.task_id,
            row.version,
            row.created_at,
            row.created_at,
            row.task_id.casefold(),
            *shared.values(project, row),
        )


class WorkingSets(working_sets.WorkingSets):
    SHOWS_ANY = (
        "EXISTS (SELECT 1 FROM jsonb_array_elements_text(memories_json::jsonb) shown "
        "WHERE shown IN (SELECT jsonb_array_elements_text(?::jsonb)))"
    )


class Stats(stats.Stats):
    # ctxkeep's tables in the schema, indexes and TOAST included
    SIZE = (
        "SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
        "WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind = 'r'"
    )
