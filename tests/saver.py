"""A process that saves checkpoints in a loop until killed (used by the crash test).

Usage: python -m tests.saver DB_PATH TASK_ID; prints "saved VERSION STEP" after each acknowledged save.
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.storage import open_store
from ctxkeep.tools.checkpoint.versions import checkpoint_save, latest_state
from ctxkeep.tools.scope import Scope


async def main(db_path: str, task_id: str) -> None:
    store = await open_store(db_path if db_path.startswith("postgresql://") else Path(db_path))
    try:
        scope = Scope(store=store, project="/crash")
        previous = await latest_state(scope, task_id)
        step = int(previous.extra.get("step", 0)) if previous else 0  # a restarted saver carries on from its last save
        while True:
            step += 1
            # completed grows (never shrinks: a vanished completed item is refused), up to 1,500 items
            state = TaskState(
                goal="survive SIGKILL",
                completed=[f"step {i}" for i in range(min(step, 1_500))],
                extra={"padding": "x" * 4000, "step": step},
            )
            saved = await checkpoint_save(scope, CheckpointSaveRequest(task_id=task_id, state=state))
            print(f"saved {saved.version} {step}", flush=True)
    finally:
        await store.close()  # a failed save must not leave the process hanging on aiosqlite's thread


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
