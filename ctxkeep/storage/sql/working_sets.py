"""The latest working set built for each task: what it selected, so the next one can diff and stay stable. Which
cached working sets showed a memory is a JSON question, asked in each store's dialect (`SHOWS_ANY`)."""

from __future__ import annotations

import json

from ctxkeep.storage.rows import WorkingSetRow
from ctxkeep.storage.sql.db import Db

_COLUMNS = "task_id, focus_key, selection_json, claims_json, recent_json, built_at, memories_json"


class WorkingSets:
    """The shared queries; a store's subclass names its JSON condition."""

    SHOWS_ANY: str  # "memories_json holds one of the ids of the JSON array <?>", as an SQL condition

    def __init__(self, db: Db) -> None:
        self._db = db

    async def put(self, project: str, row: WorkingSetRow) -> None:
        await self._db.execute(
            f"INSERT INTO working_sets (project, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
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
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM working_sets WHERE project = ? AND task_id = ?", project, task_id
        )
        return WorkingSetRow(*row) if row else None

    async def recent(self, project: str, limit: int) -> list[WorkingSetRow]:
        """The latest working set of each task, the most recently built first (ties by task id)."""
        rows = await self._db.fetch(
            f"SELECT {_COLUMNS} FROM working_sets WHERE project = ? ORDER BY built_at DESC, task_id LIMIT ?",
            project,
            limit,
        )
        return [WorkingSetRow(*row) for row in rows]

    async def forget_memories(self, project: str, memory_ids: list[str], claim_prefixes: list[str]) -> int:
        """In the cached working sets that showed any of the memories, drop the claims quoting them (the ids stay, so a
        resumed task still learns it relied on a memory that is gone); how many were rewritten (the old claims are
        owed a rewrite of the table)."""
        rows = await self._db.fetch(
            f"SELECT task_id, claims_json FROM working_sets WHERE project = ? AND {self.SHOWS_ANY} ORDER BY task_id",
            project,
            json.dumps(memory_ids),
        )
        for task_id, claims_json in rows:
            kept = [c for c in json.loads(claims_json) if not any(c.startswith(prefix) for prefix in claim_prefixes)]
            await self._db.execute(
                "UPDATE working_sets SET claims_json = ? WHERE project = ? AND task_id = ?",
                json.dumps(kept),
                project,
                task_id,
            )
        if rows:
            await self._db.owe_vacuum("working_sets")
        return len(rows)
