"""The latest working set built for each task: what it selected, so the next one can diff and stay stable."""

from __future__ import annotations

import json

import aiosqlite

from ctxkeep.storage.rows import WorkingSetRow


class WorkingSets:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def put(self, project: str, row: WorkingSetRow) -> None:
        await self._conn.execute(
            "INSERT INTO working_sets (project, task_id, focus_key, selection_json, claims_json, recent_json, built_at, memories_json) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project, task_id) DO UPDATE SET focus_key = excluded.focus_key, "
            "selection_json = excluded.selection_json, claims_json = excluded.claims_json, recent_json = excluded.recent_json, "
            "built_at = excluded.built_at, memories_json = excluded.memories_json",
            (
                project,
                row.task_id,
                row.focus_key,
                row.selection_json,
                row.claims_json,
                row.recent_json,
                row.built_at,
                row.memories_json,
            ),
        )

    async def get(self, project: str, task_id: str) -> WorkingSetRow | None:
        cursor = await self._conn.execute(
            "SELECT task_id, focus_key, selection_json, claims_json, recent_json, built_at, memories_json FROM working_sets "
            "WHERE project = ? AND task_id = ?",
            (project, task_id),
        )
        row = await cursor.fetchone()
        return WorkingSetRow(*row) if row else None

    async def recent(self, project: str, limit: int) -> list[WorkingSetRow]:
        """The latest working set of each task, the most recently built first (ties by task id)."""
        cursor = await self._conn.execute(
            "SELECT task_id, focus_key, selection_json, claims_json, recent_json, built_at, memories_json FROM working_sets "
            "WHERE project = ? ORDER BY built_at DESC, task_id LIMIT ?",
            (project, limit),
        )
        return [WorkingSetRow(*row) for row in await cursor.fetchall()]

    async def forget_memories(self, project: str, memory_ids: list[str], claim_prefixes: list[str]) -> int:
        """In the cached working sets that showed any of the memories, drop the claims quoting them (the ids stay, so a
        resumed task still learns it relied on a memory that is gone); how many were rewritten."""
        cursor = await self._conn.execute(
            "SELECT task_id, claims_json FROM working_sets WHERE project = ? AND EXISTS (SELECT 1 FROM json_each(memories_json) "
            "shown JOIN json_each(?) gone ON gone.value = shown.value)",
            (project, json.dumps(memory_ids)),
        )
        rows = list(await cursor.fetchall())
        for task_id, claims_json in rows:
            kept = [c for c in json.loads(claims_json) if not any(c.startswith(prefix) for prefix in claim_prefixes)]
            await self._conn.execute(
                "UPDATE working_sets SET claims_json = ? WHERE project = ? AND task_id = ?",
                (json.dumps(kept), project, task_id),
            )
        return len(rows)
