"""One executor racing others for a task's lease (used by tests/tools/checkpoint/test_leases.py).

Usage: python -m tests.lease_claimer DB TASK OWNER START_FILE; opens the database, writes START_FILE.OWNER.ready, waits
until START_FILE exists (so every racer starts at once), claims the task through checkpoint_load(owner, 60 s), prints
"won" or "held <holder>" and exits.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import anyio

from ctxkeep.errors import LeaseHeld
from ctxkeep.storage import open_store
from ctxkeep.tools.checkpoint import checkpoint_load
from ctxkeep.tools.scope import Scope


async def main(db: str, task_id: str, owner: str, start: str) -> None:
    store = await open_store(db if db.startswith("postgresql://") else Path(db), busy_timeout_ms=10_000)
    try:
        Path(f"{start}.{owner}.ready").touch()
        while not Path(start).exists():
            time.sleep(0.005)
        try:
            await checkpoint_load(Scope(store, "/race"), task_id, owner=owner, lease_seconds=60)
            print("won", flush=True)
        except LeaseHeld as held:
            print(f"held {held.holder}", flush=True)
    finally:
        await store.close()


if __name__ == "__main__":
    anyio.run(main, *sys.argv[1:5])
