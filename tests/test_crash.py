"""SIGKILL during saves: on reopen the hash chain verifies, the latest version is whole, the file is sound."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ctxkeep.storage import Store
from ctxkeep.tools.checkpoint import checkpoint_load, verify_chain
from ctxkeep.tools.scope import Scope

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ROOT = Path(__file__).resolve().parent.parent


def run_and_kill(db_path: Path, delay: float) -> int:
    """Start the saver, kill it with SIGKILL `delay` seconds after its first save; return the last acknowledged version."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.saver", str(db_path), "t"], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith("saved"), first
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    acknowledged = [first, *proc.stdout.read().splitlines()]
    return int(acknowledged[-1].split()[1])


async def test_sigkill_mid_save_leaves_every_version_whole(db_path: Path) -> None:
    rng = random.Random(7)
    acknowledged = 0
    for _ in range(4):
        acknowledged = run_and_kill(db_path, rng.uniform(0.05, 0.6))
    store = await Store.open(db_path)
    try:
        scope = Scope(store=store, project="/crash")
        assert await store.integrity_check() == "ok"
        assert await verify_chain(scope, "t") == []
        latest = await checkpoint_load(scope, "t")
        assert latest.version >= acknowledged  # no acknowledged save was lost
        assert latest.state.goal == "survive SIGKILL" and latest.state.extra["step"] >= 1
    finally:
        await store.close()
