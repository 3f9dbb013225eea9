"""`ctxkeep demo`: a coding agent's session through the real hooks (`ctxkeep hook …` subprocesses fed Claude Code's
hook inputs) and the real server over stdio. It speaks from its first moment, shows each of ctxkeep's jobs on the
way (the rule kept verbatim, a log shaped with its ref, the stop gate, a compaction summary checked and repaired, a
lossy save refused, a resume that gets the state back) and ends naming `ctxkeep install <client>`; with --db it leaves
what the hooks showed the model for `ctxkeep ui`; it runs again and again on one database."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.paths import TESTS

ROOT = TESTS.parent
pytestmark = pytest.mark.slow


def ctxkeep(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeep", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=180,
        cwd=ROOT,
    )


def timed_lines(*args: str) -> list[tuple[float, str]]:
    """`ctxkeep <args>`'s stdout lines, each with the seconds since the process started when it arrived."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxkeep", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert proc.stdout is not None
    lines = [(time.monotonic() - started, line.rstrip("\n")) for line in proc.stdout]
    assert proc.wait(timeout=180) == 0, "\n".join(line for _, line in lines)[-3000:]
    return lines


def test_the_demo_is_a_coding_session_that_speaks_first_and_ends_naming_the_install() -> None:
    lines = timed_lines("demo")
    text = "\n".join(line for _, line in lines)
    ready = next(at for at, line in lines if "server ready" in line)
    assert lines[0][0] < ready and "starting `ctxkeep serve`" in text.split("server ready")[0]  # a line before it
    assert lines[-1][1].startswith("Use it in your agent: ctxkeep install claude-code")
    assert "demo finished: every step behaved as expected" in lines[-2][1]
    assert "user: Never push to main: open a pull request from the branch fix/limiter-429." in text
    assert "(180,085 bytes, 2,412 lines)" in text and "[ctxkeep: the rest is not lost." in text
    assert "FAILED tests/test_limiter.py::test_over_quota_gets_429 - assert 500 == 429" in text
    assert "Stop blocked once" in text and "ctxkeep verification gate: limiter.py changed" in " ".join(text.split())
    assert "saved fix-rate-limiter v1" in text and "saved fix-rate-limiter v2" in text
    flat = " ".join(text.split())  # long lines are wrapped for the terminal
    repair = flat.split("[5/7]", 1)[1].split("[6/7]", 1)[0]
    assert "Next: push the fix to main." in repair  # the summary as Claude Code wrote it
    assert "## Rules the summary lost" in repair and "- Never push to main" in repair
    assert "## Still pending (not done)" in repair and "- Open a pull request from fix/limiter-429" in repair
    refused = flat.split("[6/7]", 1)[1].split("[7/7]", 1)[0]
    assert "REFUSED: checkpoint_save refused: 2 violation(s)" in refused
    assert "constraint_dropped | Never push to main" in refused and "pending_unaccounted | Open a pull" in refused
    resumed = flat.split("[7/7]", 1)[1]
    assert (
        "- Never push to main" in resumed and "shop.limiter.QuotaExceeded: key k1 over 100 requests/minute" in resumed
    )
    assert "PR #128" in resumed and "UNEXPECTED" not in text
    assert "Supplier" not in text and "Completed:" not in text


def test_with_a_database_the_demo_leaves_what_the_model_was_shown_for_the_viewer(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    env = {"CTXKEEP_DB": str(tmp_path / "demo.db"), "CTXKEEP_PROJECT": str(tmp_path / "project")}
    done = ctxkeep("demo", "--db", env["CTXKEEP_DB"], env=env)
    assert done.returncode == 0, done.stdout[-3000:]
    assert f"CTXKEEP_DB={env['CTXKEEP_DB']} ctxkeep ui" in done.stdout
    with sqlite3.connect(env["CTXKEEP_DB"]) as conn:
        shown = conn.execute(
            "SELECT session_id, kind, status, source FROM session_records WHERE kind IN ('injected', 'offloaded', "
            "'blocked') ORDER BY at"
        ).fetchall()
        prompts = conn.execute("SELECT text FROM session_records WHERE kind = 'prompt' ORDER BY at").fetchall()
    assert shown == [
        ("demo-session", "offloaded", "shaped: the model got this view instead of the output", "Bash"),
        ("demo-session", "blocked", "Stop blocked once", ""),
        ("demo-session", "injected", "repair of the compaction summary", ""),
    ]
    assert prompts[1] == ("Never push to main: open a pull request from the branch fix/limiter-429.",)
    journal = json.loads(ctxkeep("journal", "--json", env=env).stdout)
    assert [(e["action"], e["external_id"]) for e in journal["entries"]] == [("open pull request", "PR #128")]
    assert "QuotaExceeded" in ctxkeep("search", "QuotaExceeded", env=env).stdout


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
    assert "task fix-rate-limiter\n" in first.stdout
    assert "task fix-rate-limiter-2 (earlier runs left fix-rate-limiter)" in second.stdout
    assert "saved fix-rate-limiter-2 v2" in second.stdout
    tasks = {t["task_id"]: t for t in json.loads(ctxkeep("tasks", "--json", env=env).stdout)["tasks"]}
    assert set(tasks) == {"fix-rate-limiter", "fix-rate-limiter-2"}
    for task in tasks.values():  # neither run moved a completed item back to pending
        assert task["latest_version"] == 2 and task["pending"] == 0
    with sqlite3.connect(env["CTXKEEP_DB"]) as conn:
        sessions = conn.execute("SELECT DISTINCT session_id FROM session_records ORDER BY 1").fetchall()
    assert sessions == [("demo-session",), ("demo-session-2",)]
