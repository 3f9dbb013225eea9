"""The latest working set built for each task: what it selected, so the next one can diff and stay stable."""

from __future__ import annotations

import json

from ctxkeep.storage.postgres.maintenance import Maintenance
from ctxkeep.storage.postgres.session import Session
from ctxkeep.storage.rows import WorkingSetRow

_COLUMNS = "task_id, focus_key, selection_json, claims_json, recent_json, built_at, memories_json"


class WorkingSets:
    def __init__(self, session: Session, maintenance: Maintenance) -> None:
        self._s = session
        self._maintenance = maintenance

    async def put(self, project: str, row: WorkingSetRow) -> None:
        conn = await self._s.begun()
        await conn.execute(
            f"INSERT INTO working_sets (project, {_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) "
            "ON CONFLICT (project, task_id) DO UPDATE SET focus_key = excluded.focus_key, selection_json = excluded.selection_json, "
            "claims_json = excluded.claims_json, recent_json = excluded.recent_json, built_at = excluded.built_at, "
            "memories_json = excluded.memories_json",
            project,
            row.task_id,
            row.focus_key,
            row.selection_json,
            row.claims_json,
            row.recent_json,
            row.built_at,
            row.memories_json,
        )

    async def get(self, project: str, task_id: str) -> WorkingSetRow | None:
        conn = await self._s.begun()
        row = await conn.fetchrow(
            f"SELECT {_COLUMNS} FROM working_sets WHERE project = $1 AND task_id = $2", project, task_id
        )
        return WorkingSetRow(*row) if row else None

    async def recent(self, project: str, limit: int) -> list[WorkingSetRow]:
        conn = await self._s.begun()
        rows = await conn.fetch(
            f"SELECT {_COLUMNS} FROM working_sets WHERE project = $1 ORDER BY built_at DESC, task_id LIMIT $2",
            project,
            limit,
        )
        return [WorkingSetRow(*row) for row in rows]

    async def forget_memories(self, project: str, memory_ids: list[str], claim_prefixes: list[str]) -> int:
        """In the cached working sets that showed any of the memories, drop the claims quoting them (the ids stay);
        how many were rewritten (the old rows' bytes are owed a rewrite of the table)."""
        conn = await self._s.begun()
        rows = await conn.fetch(
            "SELECT task_id, claims_json FROM working_sets WHERE project = $1 AND EXISTS (SELECT 1 FROM "
            "jsonb_array_elements_text(memories_json::jsonb) shown WHERE shown = ANY($2::text[])) ORDER BY task_id",
            project,
            memory_ids,
        )
        for task_id, claims_json in rows:
            kept = [c for c in json.loads(claims_json) if not any(c.startswith(prefix) for prefix in claim_prefixes)]
            await conn.execute(
                "UPDATE working_sets SET claims_json = $1 WHERE project = $2 AND task_id = $3",
                json.dumps(kept),
                project,
                task_id,
            )
        if rows:
            await self._maintenance.owe_vacuum("working_sets")
        return len(rows)
