"""Which task a prompt means when none is named, and task-id completion: the latest session's task, else the task
saved most recently."""

from __future__ import annotations

from ctxkeep.errors import NotFound
from ctxkeep.tools.checkpoint.versions import checkpoint_list, latest_state
from ctxkeep.tools.scope import Scope


async def _latest_session_task(scope: Scope) -> str | None:
    async with scope.store.snapshot() as tx:
        row = await tx.sessions.latest(scope.project)
    return row.task_id if row is not None and await latest_state(scope, row.task_id) is not None else None


async def active_task(scope: Scope) -> str:
    """The latest session's task, else the task saved most recently; raises NotFound when the project has none."""
    found = await _latest_session_task(scope)
    if found is not None:
        return found
    tasks = (await checkpoint_list(scope, limit=1)).tasks
    if not tasks:
        raise NotFound(f"no task in this project ({scope.project}) yet; checkpoint_save starts one")
    return tasks[0].task_id


async def task_ids(scope: Scope, prefix: str, limit: int = 100) -> tuple[list[str], int]:
    """Up to `limit` task ids of this project starting with `prefix` (case-insensitive), most recently saved first,
    and how many match in all (filtered in the store, over every task)."""
    async with scope.store.snapshot() as tx:
        return await tx.checkpoints.task_ids(scope.project, prefix, limit)
