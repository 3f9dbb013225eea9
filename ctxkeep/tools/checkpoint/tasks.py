"""Which task a prompt means when none is named, and task-id completion: the task of the client session this server
runs for (never another session's); without one, the latest session's task, else the task saved most recently."""

from __future__ import annotations

from ctxkeep.errors import NotFound
from ctxkeep.tools.checkpoint.versions import checkpoint_list, latest_state
from ctxkeep.tools.scope import Scope


async def _latest_session_task(scope: Scope) -> str | None:
    async with scope.store.snapshot() as tx:
        row = await tx.sessions.latest(scope.project)
    return row.task_id if row is not None and await latest_state(scope, row.task_id) is not None else None


async def _this_session_task(scope: Scope, session: str) -> str:
    async with scope.store.snapshot() as tx:
        row = await tx.sessions.get(scope.project, session)
    for task_id in ([row.task_id] if row is not None else []) + [f"cc-{session}"]:
        if await latest_state(scope, task_id) is not None:
            return task_id
    raise NotFound(
        f"this session ({session}) has no task yet (its hooks save one at the first compaction); name a task "
        "instead, or checkpoint_save to start one"
    )


async def active_task(scope: Scope) -> str:
    """The task of this server's client session when it is known (never another session's); else the latest
    session's task, else the task saved most recently. Raises NotFound when there is none."""
    if scope.client_session:
        return await _this_session_task(scope, scope.client_session)
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
