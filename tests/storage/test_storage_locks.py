"""Two stores on one SQLite file in one process (a shared server's token check beside its tools, the MCP server beside
its hooks' spool worker) keep seeing what other processes commit. Opening the second store once closed a descriptor
of the file, which drops every POSIX lock the process holds on it (fcntl locks belong to the process): another
process then took itself for the file's last user, reset the WAL on closing, and the first store read a stale
snapshot from then on (it never saw a token revoked by `ctxkeep token revoke`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.storage import open_store
from ctxkeep.tools.checkpoint import checkpoint_save
from ctxkeep.tools.scope import Scope
from tests.paths import TESTS

pytestmark = pytest.mark.anyio
ROOT = TESTS.parent


def _other_process(db: Path, *args: str) -> None:
    env = {**os.environ, "CTXKEEP_DB": str(db), "CTXKEEP_PROJECT": "/p"}
    done = subprocess.run(
        [sys.executable, "-m", "ctxkeep", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


async def test_a_second_store_on_the_same_file_leaves_the_first_one_seeing_other_processes_commits(
    tmp_path: Path,
) -> None:
    db = tmp_path / "shared.db"
    first = await open_store(db)
    second = await open_store(db)  # the same file again, in the same process
    try:
        _other_process(db, "tasks")  # another process opens and closes the file
        await checkpoint_save(
            Scope(await open_store(db), "/p"), CheckpointSaveRequest(task_id="t", state=TaskState(goal="g"))
        )
        for store in (first, second):
            async with store.snapshot() as tx:
                assert await tx.checkpoints.latest_version("/p", "t") == 1
        _other_process(db, "tasks")
        env = {**os.environ, "CTXKEEP_DB": str(db), "CTXKEEP_PROJECT": "/p"}
        subprocess.run(
            [
                sys.executable,
                "-c",
                "import anyio\nfrom pathlib import Path\nfrom ctxkeep.storage import open_store\n"
                "from ctxkeep.models import CheckpointSaveRequest, TaskState\nfrom ctxkeep.tools.checkpoint import checkpoint_save\n"
                "from ctxkeep.tools.scope import Scope\nasync def m():\n    s = await open_store(Path('"
                + str(db)
                + "'))\n"
                "    await checkpoint_save(Scope(s, '/p'), CheckpointSaveRequest(task_id='t', state=TaskState(goal='g', pending=['p'])))\n"
                "    await s.close()\nanyio.run(m)\n",
            ],
            env=env,
            cwd=ROOT,
            check=True,
            timeout=60,
        )
        for store in (first, second):
            async with store.snapshot() as tx:
                assert await tx.checkpoints.latest_version("/p", "t") == 2  # another process's commit, seen
    finally:
        await first.close()
        await second.close()
