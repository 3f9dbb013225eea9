"""PostgreSQL's dialect of the shared tables (`ctxkeep.storage.sql`): the task's advisory lock, the casefolded task
id kept in a column, strpos, jsonb, and the size of the schema's relations."""

from __future__ import annotations

from dataclasses import astuple

from ctxkeep.storage.postgres.session import Session, object_lock
from ctxkeep.storage.postgres.statements import PostgresDb
from ctxkeep.storage.rows import CheckpointRow, LeaseRow
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
        """A save's conditional write as one statement (`ctxkeep_append`, migration 11) that takes the task's lock,
        checks the head and the lease and writes; first in its transaction it runs on its own (autocommit), so the
        task is held only while PostgreSQL runs it, never while a server's Python works."""
        version = [None] * 12 if row is None else [getattr(row, name) for name in shared.COLUMNS[1:]]
        return bool(
            await self._s.holding(
                "task",
                project,
                task_id,
                self._s.sole(
                    "SELECT ctxkeep_append($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, "
                    "$17, $18, $19, $20, $21, $22, $23, $24)",
                    object_lock("task", project, task_id),
                    project,
                    task_id,
                    task_id.casefold(),
                    expected,
                    *(astuple(seen)[1:] if seen is not None else (None, None, None)),
                    *(astuple(lease)[1:] if lease is not None else (None, None, None)),
                    release,
                    *version,
                ),
            )
        )

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
