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

from ctxkeep.storage import open_store
from ctxkeep.tools.checkpoint.versions import checkpoint_load, verify_chain
from ctxkeep.tools.scope import Scope
from tests.paths import TESTS

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
ROOT = TESTS.parent


def run_and_kill(db_path: Path, delay: float) -> tuple[int, int]:
    """Start the saver, kill it with SIGKILL `delay` seconds after its first save; return the last acknowledged (version, step)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.saver", str(db_path), "t"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith("saved"), first
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    acknowledged = [first, *proc.stdout.read().splitlines()]
    _, version, step = acknowledged[-1].split()
    return int(version), int(step)


async def test_sigkill_mid_save_leaves_every_version_whole(db_path: Path) -> None:
    rng = random.Random(7)
    version, step = 0, 0
    for _ in range(4):
        version, step = run_and_kill(db_path, rng.uniform(0.05, 0.6))
    store = await open_store(db_path)
    try:
        scope = Scope(store=store, project="/crash")
        assert await store.integrity_check() == "ok"
        assert await verify_chain(scope, "t") == []
        latest = await checkpoint_load(scope, "t")
        # the last acknowledged save survived; at most one more committed before the kill landed
        assert latest.version in (version, version + 1)
        assert latest.state.extra["step"] == step + (latest.version - version)
        assert latest.state.extra["padding"] == "x" * 4000
    finally:
        await store.close()
