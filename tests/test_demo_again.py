"""`ctxkeep demo --db FILE` runs again and again on one database: each run its own task, every step as expected."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def ctxkeep(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeep", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=180,
        cwd=ROOT,
    )


@pytest.mark.slow
def test_the_demo_runs_twice_on_one_database_each_time_with_its_own_task(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    env = {"CTXKEEP_DB": str(tmp_path / "demo.db"), "CTXKEEP_PROJECT": str(tmp_path / "project")}
    first = ctxkeep("demo", "--db", env["CTXKEEP_DB"], env=env)
    second = ctxkeep("demo", "--db", env["CTXKEEP_DB"], env=env)
    assert first.returncode == 0, first.stdout[-3000:]
    assert second.returncode == 0, second.stdout[-3000:]
    for run in (first, second):
        assert "demo finished: every step behaved as expected" in run.stdout
        assert "UNEXPECTED" not in run.stdout and "version conflict" not in run.stdout
    assert "task procurement, " in first.stdout
    assert "task procurement-2 (procurement is there from an earlier run)" in second.stdout
    assert "saved procurement-2 v2" in second.stdout
    tasks = {t["task_id"]: t for t in json.loads(ctxkeep("tasks", "--json", env=env).stdout)["tasks"]}
    assert set(tasks) == {"procurement", "procurement-2"}
    for task in tasks.values():  # neither run moved a completed item back to pending
        assert task["latest_version"] == 2 and task["pending"] == 0
    state = json.loads(ctxkeep("show", "procurement", "--json", env=env).stdout)
    assert "Supplier C freight missing" in state["completed"] and state["pending"] == []
