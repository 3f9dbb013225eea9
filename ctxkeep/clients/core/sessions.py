"""Which task a client session is bound to (by its own hooks): never another session's task."""

from __future__ import annotations

from ctxkeep.tools.checkpoint import latest_state
from ctxkeep.tools.scope import Scope


async def session_task(scope: Scope, session_id: str) -> str | None:
    """The task the hooks bound `session_id` to, when it still has a checkpoint (never another session's task)."""
    async with scope.store.snapshot() as tx:
        row = await tx.sessions.get(scope.project, session_id)
    return row.task_id if row is not None and await latest_state(scope, row.task_id) is not None else None
