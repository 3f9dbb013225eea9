"""Queries over the action journal: one row per idempotency key, its result written once."""

from __future__ import annotations

from ctxkeep.storage.postgres.session import Session
from ctxkeep.storage.rows import ActionRow

_COLUMNS = (
    "idempotency_key, task_id, action, target, params_summary, intent_at, status, external_id, receipt_ref, "
    "detail, result_at"
)


class Journal:
    def __init__(self, session: Session) -> None:
        self._s = session

    async def get(self, project: str, key: str) -> ActionRow | None:
        conn = await self._s.begun()
        row = await conn.fetchrow(
            f"SELECT {_COLUMNS} FROM actions WHERE project = $1 AND idempotency_key = $2", project, key
        )
        return ActionRow(*row) if row else None

    async def insert_intent(self, project: str, row: ActionRow) -> bool:
        conn = await self._s.begun()
        status = await conn.execute(
            "INSERT INTO actions (project, idempotency_key, task_id, action, target, params_summary, intent_at) "
            "VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (project, idempotency_key) DO NOTHING",
            project,
            row.idempotency_key,
            row.task_id,
            row.action,
            row.target,
            row.params_summary,
            row.intent_at,
        )
        return bool(status == "INSERT 0 1")

    async def set_result(self, project: str, row: ActionRow) -> bool:
        conn = await self._s.begun()
        status = await conn.execute(
            "UPDATE actions SET status = $1, external_id = $2, receipt_ref = $3, detail = $4, result_at = $5 "
            "WHERE project = $6 AND idempotency_key = $7 AND status = 'open'",
            row.status,
            row.external_id,
            row.receipt_ref,
            row.detail,
            row.result_at,
            project,
            row.idempotency_key,
        )
        return bool(status == "UPDATE 1")

    async def open_for_task(self, project: str, task_id: str) -> list[ActionRow]:
        conn = await self._s.begun()
        rows = await conn.fetch(
            f"SELECT {_COLUMNS} FROM actions WHERE project = $1 AND task_id = $2 AND status = 'open' "
            "ORDER BY intent_at, idempotency_key",
            project,
            task_id,
        )
        return [ActionRow(*row) for row in rows]

    async def for_task(self, project: str, task_id: str) -> list[ActionRow]:
        conn = await self._s.begun()
        rows = await conn.fetch(
            f"SELECT {_COLUMNS} FROM actions WHERE project = $1 AND task_id = $2 ORDER BY intent_at, idempotency_key",
            project,
            task_id,
        )
        return [ActionRow(*row) for row in rows]

    async def recent(self, project: str, open_only: bool, limit: int) -> list[ActionRow]:
        conn = await self._s.begun()
        rows = await conn.fetch(
            f"SELECT {_COLUMNS} FROM actions WHERE project = $1 AND (NOT $2 OR status = 'open') "
            "ORDER BY intent_at DESC, idempotency_key LIMIT $3",
            project,
            open_only,
            limit,
        )
        return [ActionRow(*row) for row in rows]
