"""The action journal: one row per idempotency key, its result written once."""

from __future__ import annotations

from ctxkeep.storage.rows import ActionRow
from ctxkeep.storage.sql.db import Db

_COLUMNS = (
    "idempotency_key, task_id, action, target, params_summary, intent_at, status, external_id, receipt_ref, "
    "detail, result_at"
)


class Journal:
    def __init__(self, db: Db) -> None:
        self._db = db

    async def get(self, project: str, key: str) -> ActionRow | None:
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM actions WHERE project = ? AND idempotency_key = ?", project, key
        )
        return ActionRow(*row) if row else None

    async def insert_intent(self, project: str, row: ActionRow) -> bool:
        """Record an intent; False (nothing written) when the key is taken already, also by a concurrent call."""
        return (
            await self._db.execute(
                "INSERT INTO actions (project, idempotency_key, task_id, action, target, params_summary, intent_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project, idempotency_key) DO NOTHING",
                project,
                row.idempotency_key,
                row.task_id,
                row.action,
                row.target,
                row.params_summary,
                row.intent_at,
            )
            == 1
        )

    async def set_result(self, project: str, row: ActionRow) -> bool:
        """Record the result of an open intent; False when it has one already (the table refuses to change it)."""
        return (
            await self._db.execute(
                "UPDATE actions SET status = ?, external_id = ?, receipt_ref = ?, detail = ?, result_at = ? "
                "WHERE project = ? AND idempotency_key = ? AND status = 'open'",
                row.status,
                row.external_id,
                row.receipt_ref,
                row.detail,
                row.result_at,
                project,
                row.idempotency_key,
            )
            == 1
        )

    async def open_for_task(self, project: str, task_id: str) -> list[ActionRow]:
        """The task's intents without a result, oldest first."""
        rows = await self._db.fetch(
            f"SELECT {_COLUMNS} FROM actions WHERE project = ? AND task_id = ? AND status = 'open' "
            "ORDER BY intent_at, idempotency_key",
            project,
            task_id,
        )
        return [ActionRow(*row) for row in rows]

    async def for_task(self, project: str, task_id: str) -> list[ActionRow]:
        """Every journal entry of the task, oldest first."""
        rows = await self._db.fetch(
            f"SELECT {_COLUMNS} FROM actions WHERE project = ? AND task_id = ? ORDER BY intent_at, idempotency_key",
            project,
            task_id,
        )
        return [ActionRow(*row) for row in rows]

    async def recent(self, project: str, open_only: bool, limit: int) -> list[ActionRow]:
        """The project's journal entries of every task (only intents without a result when `open_only`), the most
        recently intended first (ties by idempotency key)."""
        rows = await self._db.fetch(
            f"SELECT {_COLUMNS} FROM actions WHERE project = ? AND (? = 0 OR status = 'open') "
            "ORDER BY intent_at DESC, idempotency_key LIMIT ?",
            project,
            int(open_only),
            limit,
        )
        return [ActionRow(*row) for row in rows]
