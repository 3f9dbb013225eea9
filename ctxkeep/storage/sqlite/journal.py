"""Queries over the action journal: one row per idempotency key, its result written once."""

from __future__ import annotations

import aiosqlite

from ctxkeep.storage.rows import ActionRow

_COLUMNS = (
    "idempotency_key, task_id, action, target, params_summary, intent_at, status, external_id, receipt_ref, "
    "detail, result_at"
)


class Journal:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def get(self, project: str, key: str) -> ActionRow | None:
        cursor = await self._conn.execute(
            f"SELECT {_COLUMNS} FROM actions WHERE project = ? AND idempotency_key = ?", (project, key)
        )
        row = await cursor.fetchone()
        return ActionRow(*row) if row else None

    async def insert_intent(self, project: str, row: ActionRow) -> bool:
        cursor = await self._conn.execute(
            "INSERT INTO actions (project, idempotency_key, task_id, action, target, params_summary, intent_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project, idempotency_key) DO NOTHING",
            (project, row.idempotency_key, row.task_id, row.action, row.target, row.params_summary, row.intent_at),
        )
        return cursor.rowcount == 1

    async def set_result(self, project: str, row: ActionRow) -> bool:
        """Record the result of an open intent (the table refuses to change a result once written)."""
        cursor = await self._conn.execute(
            "UPDATE actions SET status = ?, external_id = ?, receipt_ref = ?, detail = ?, result_at = ? "
            "WHERE project = ? AND idempotency_key = ? AND status = 'open'",
            (row.status, row.external_id, row.receipt_ref, row.detail, row.result_at, project, row.idempotency_key),
        )
        return cursor.rowcount == 1

    async def open_for_task(self, project: str, task_id: str) -> list[ActionRow]:
        """The task's intents without a result, oldest first."""
        cursor = await self._conn.execute(
            f"SELECT {_COLUMNS} FROM actions WHERE project = ? AND task_id = ? AND status = 'open' ORDER BY intent_at, idempotency_key",
            (project, task_id),
        )
        return [ActionRow(*row) for row in await cursor.fetchall()]

    async def for_task(self, project: str, task_id: str) -> list[ActionRow]:
        """Every journal entry of the task, oldest first."""
        cursor = await self._conn.execute(
            f"SELECT {_COLUMNS} FROM actions WHERE project = ? AND task_id = ? ORDER BY intent_at, idempotency_key",
            (project, task_id),
        )
        return [ActionRow(*row) for row in await cursor.fetchall()]

    async def recent(self, project: str, open_only: bool, limit: int) -> list[ActionRow]:
        """The project's journal entries of every task (only intents without a result when `open_only`), the most
        recently intended first (ties by idempotency key)."""
        cursor = await self._conn.execute(
            f"SELECT {_COLUMNS} FROM actions WHERE project = ? AND (? = 0 OR status = 'open') "
            "ORDER BY intent_at DESC, idempotency_key LIMIT ?",
            (project, int(open_only), limit),
        )
        return [ActionRow(*row) for row in await cursor.fetchall()]
