"""The journal read for people: every task's entries, or only the intents whose outcome is unknown, newest first."""

from __future__ import annotations

from ctxkeep.models.journal import Action
from ctxkeep.tools.journal.actions import to_action
from ctxkeep.tools.scope import Scope

MAX_ENTRIES = 10_000


async def journal_entries(
    scope: Scope, open_only: bool = False, limit: int = 100, task_id: str | None = None
) -> list[Action]:
    """Journal entries of the project (of `task_id` only when given), the most recently intended first; only open
    intents (no result recorded) when `open_only`. Reads only."""
    limit = max(1, min(limit, MAX_ENTRIES))
    async with scope.store.snapshot() as tx:
        if task_id is None:
            rows = await tx.journal.recent(scope.project, open_only, limit)
        else:
            rows = [
                row
                for row in reversed(await tx.journal.for_task(scope.project, task_id))
                if not open_only or row.status == "open"
            ]
    return [to_action(row) for row in rows[:limit]]
