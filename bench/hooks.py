"""Claude Code hooks: wall time of `ctxkeep hook session-start` and `ctxkeep hook pre-compact`, as Claude Code runs them.

Each run is a new process (`python -m ctxkeep hook …`, JSON on stdin), timed from spawn to exit.
session-start: a task with 100 checkpoint versions and 10,000 evidence items (real text from
../shared/data) bound to the session. pre-compact: the 3 MB real Claude Code transcript, once on
a fresh database (first ingest) and then again unchanged (already ingested). Baseline in the same
run: the interpreter's own floor (`python -c pass`) and the hooks' import floor (the hook modules
imported, nothing run).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench.common import SHARED_DATA, summary_ms
from bench.fixture import items
from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.settings import Settings
from ctxkeep.storage import SessionRow
from ctxkeep.tools.checkpoint.versions import checkpoint_save
from ctxkeep.tools.evidence.records import evidence_put
from ctxkeep.tools.scope import open_scope

# as installed by pip: compiled modules cached (this machine sets PYTHONDONTWRITEBYTECODE, which a user's does not)
BASE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
TRANSCRIPT = SHARED_DATA / "claude-code-transcripts" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
RUNS = 15


def _seconds(args: list[str], stdin: str, env: dict[str, str]) -> float:
    started = time.perf_counter()
    done = subprocess.run(args, input=stdin, capture_output=True, text=True, env=env, timeout=300)
    elapsed = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    return elapsed


def _hook(name: str, stdin: dict[str, Any], env: dict[str, str]) -> float:
    return _seconds([sys.executable, "-m", "ctxkeep", "hook", name], json.dumps(stdin), env)


async def _big_task(env: dict[str, str], versions: int, evidence: int) -> None:
    async with open_scope(Settings.from_env(env)) as scope:
        texts = items(evidence, 1_500, seed=3)
        for start in range(0, len(texts), 500):
            await evidence_put(scope, [EvidenceItem(content=t, kind="tool_result", source="Bash", task_id="big") for t in texts[start:start + 500]])
        completed: list[str] = []
        for version in range(versions):
            completed.append(f"step {version}: {texts[version][:80]}")
            state = TaskState(goal="Migrate the billing service without downtime", constraints=["Do not touch production data"],
                              pending=[f"migrate table {i}" for i in range(version, versions)], completed=completed,
                              decisions=["Blue-green deploy"], next_action=f"migrate table {version}")
            await checkpoint_save(scope, CheckpointSaveRequest(task_id="big", state=state, strict=False))
        async with scope.store.transaction() as tx:
            await tx.sessions.put(scope.project, SessionRow("s-big", "big", True, "/bench.jsonl", "", "2026-11-30T00:00:00.000000Z"))


def _session_start(folder: Path, quick: bool) -> dict[str, Any]:
    env = {**BASE_ENV, "CTXKEEP_DB": str(folder / "start.db"), "CTXKEEP_PROJECT": str(folder), "HOME": str(folder)}
    versions, evidence = (20, 2_000) if quick else (100, 10_000)
    anyio.run(_big_task, env, versions, evidence)
    stdin = {"session_id": "s-big", "cwd": str(folder), "hook_event_name": "SessionStart", "source": "compact"}
    _hook("session-start", stdin, env)  # warm-up: writes the compiled modules once, as pip install does
    times = [_hook("session-start", stdin, env) for _ in range(5 if quick else RUNS)]
    return {"times": summary_ms(times), "versions": versions, "evidence": evidence}


def _pre_compact(folder: Path, quick: bool) -> dict[str, Any]:
    home = folder / "home"
    transcript = home / ".claude" / "projects" / "-bench" / "session.jsonl"
    transcript.parent.mkdir(parents=True)
    shutil.copy(TRANSCRIPT, transcript)
    first, again = [], []
    for attempt in range(1 if quick else 3):
        env = {**BASE_ENV, "CTXKEEP_DB": str(folder / f"pre-{attempt}.db"), "CTXKEEP_PROJECT": str(folder), "HOME": str(home)}
        stdin = {"session_id": "s-1", "transcript_path": str(transcript), "cwd": str(folder), "hook_event_name": "PreCompact", "trigger": "auto"}
        first.append(_hook("pre-compact", stdin, env))
        again += [_hook("pre-compact", stdin, env) for _ in range(5 if quick else RUNS // 3)]
    return {"first": summary_ms(first), "again": summary_ms(again), "bytes": TRANSCRIPT.stat().st_size}


def _floors(quick: bool) -> dict[str, Any]:
    runs = 5 if quick else RUNS
    python = [_seconds([sys.executable, "-c", "pass"], "", BASE_ENV) for _ in range(runs)]
    imports = [_seconds([sys.executable, "-c", "import ctxkeep.cli, ctxkeep.clients.core.hook_runner, ctxkeep.clients.claude_code.hooks.session_start"], "", BASE_ENV)
               for _ in range(runs)]
    return {"python": summary_ms(python), "imports": summary_ms(imports)}


def run(quick: bool) -> dict[str, Any]:
    if not TRANSCRIPT.exists():
        return {"title": "Claude Code hooks", "rows": [], "notes": ["skipped: ../shared/data/claude-code-transcripts is absent"]}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "start").mkdir()
        (folder / "pre").mkdir()
        start = _session_start(folder / "start", quick)
        pre = _pre_compact(folder / "pre", quick)
        floors = _floors(quick)

    def ms(summary: dict[str, float]) -> str:
        return f"p50 {summary['p50_ms']:.0f} / p95 {summary['p95_ms']:.0f} ms"

    floor = f"{ms(floors['python'])} bare interpreter; {ms(floors['imports'])} importing the hook modules"
    return {"title": "Claude Code hooks", "rows": [
        {"metric": f"session-start, task with {start['versions']} versions and {start['evidence']:,} evidence items (wall, new process)",
         "value": ms(start["times"]), "baseline": floor, "target": "≤ 250 ms"},
        {"metric": f"pre-compact, {pre['bytes'] / 1e6:.1f} MB transcript already ingested (wall)", "value": ms(pre["again"]),
         "baseline": floor, "target": "≤ 250 ms"},
        {"metric": f"pre-compact, {pre['bytes'] / 1e6:.1f} MB transcript, first ingest (wall)",
         "value": f"median {pre['first']['p50_ms']:.0f} ms of {pre['first']['n']}", "baseline": "", "target": "report"},
    ], "notes": ["Each run is a new process, as Claude Code starts hooks; most of the time is the interpreter and imports "
                 "(pydantic, asyncio and aiosqlite, the models), the baseline beside it; compiled modules cached, as pip installs them."], "raw": {"session_start": start, "pre_compact": pre, "floors": floors}}
