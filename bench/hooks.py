"""Claude Code hooks: wall time of each `ctxkeep hook <event>` as Claude Code runs it, as a ratio to the same-run floor.

Every run is a new process started through the installed `ctxkeep` command with the event's JSON on stdin, timed from
spawn to exit (wall, and the CPU time the process used: a loaded machine stretches wall time, not CPU). The floor is
`python -c "import json, sqlite3"` on the same interpreter; floor and hooks are interleaved round by round, so a noisy
moment of the shared machine hits all of them alike. The inputs are real (`bench/hook_inputs.py`): the shared
transcript up to its compaction (2.1 MB, ingested once by pre-compact's worker: several hundred records), then the
compaction as Claude Code wrote it (its 15.7 KB summary, which the compact session start checks); a real 1.7 KB Bash
output (passed through) and the first 100 KB of the largest one of the shared sessions (offloaded); a store of 10,000
evidence items and a task saved 100 times beside the session. An unchanged pre-compact still prints the brief for
Claude Code's summary from all the records, and a new session's session-start (`startup`, another session id in the
same project) builds the startup brief from them. Budgets (DESIGN.md): per-tool-call hooks ≤ 2×, offloading 100 KB
≤ 4×, session-start and an unchanged pre-compact ≤ 2.5×.
"""

from __future__ import annotations

import json
import os
import sqlite3
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import hook_inputs
from bench.common import BASE_ENV, CTXKEEP_COMMAND, FLOOR_COMMAND, percentile, process_cost
from ctxkeep.project import transcript_slug

SMALL = "post-tool-use, a real 1.7 KB Bash output (passed through)"
BIG = "post-tool-use, a real 100 KB Bash output (offloaded)"
COMPACT = "session-start (compact, the real 15.7 KB summary checked)"
BUDGETS = {
    SMALL: 2.0,
    BIG: 4.0,
    "user-prompt-submit": 2.0,
    "stop": 2.0,
    COMPACT: 2.5,
    "session-start (startup, the brief of the earlier session)": 2.5,
    "pre-compact, transcript unchanged, printing the brief": 2.5,
}


class _Session:
    """A Claude Code home with the real transcript up to its compaction, the store beside it, and the inputs of each
    hook event."""

    def __init__(self, root: Path) -> None:
        self.project = root / "project"
        self.project.mkdir()
        config = root / "claude"
        self.transcript = config / "projects" / transcript_slug(str(self.project.resolve())) / "s.jsonl"
        self.transcript.parent.mkdir(parents=True)
        self.transcript.write_text(hook_inputs.before_compaction(), encoding="utf-8")
        self.env = {
            **BASE_ENV,
            "HOME": str(root),
            "CLAUDE_CONFIG_DIR": str(config),
            "CTXKEEP_DB": str(root / "ctxkeep.db"),
            "CTXKEEP_PROJECT": str(self.project),
            "CTXKEEP_WORKER_WAIT_S": "300",
            "CTXKEEP_START_BRIEF_DAYS": "100000",  # the shared transcript is older than the default 14 days
        }
        hook_inputs.build_store(Path(self.env["CTXKEEP_DB"]), os.path.realpath(self.project))

    def data(self, event: str, session_id: str = "s", **fields: Any) -> bytes:
        return json.dumps(
            {
                "session_id": session_id,
                "transcript_path": str(self.transcript),
                "cwd": str(self.project),
                "hook_event_name": event,
                **fields,
            }
        ).encode()

    def hook(self, name: str, stdin: bytes) -> tuple[float, float]:
        return process_cost([*CTXKEEP_COMMAND, "hook", name], stdin, self.env)


def _inputs(session: _Session, use: int) -> dict[str, tuple[str, bytes]]:
    outputs = hook_inputs.outputs()
    (small_command, small), (big_command, big) = outputs["2 KB"], outputs["100 KB"]
    return {
        SMALL: (
            "post-tool-use",
            session.data(
                "PostToolUse",
                tool_name="Bash",
                tool_input={"command": small_command},
                tool_response=small,
                tool_use_id=f"toolu_small{use}",
            ),
        ),
        BIG: (
            "post-tool-use",
            session.data(
                "PostToolUse",
                tool_name="Bash",
                tool_input={"command": big_command},
                tool_response=big,
                tool_use_id=f"toolu_big{use}",
            ),
        ),
        "user-prompt-submit": (
            "user-prompt-submit",
            session.data("UserPromptSubmit", prompt=f"never touch the vendored libs ({use})"),
        ),
        "stop": ("stop", session.data("Stop", stop_hook_active=True)),
        COMPACT: ("session-start", session.data("SessionStart", source="compact")),
        "session-start (startup, the brief of the earlier session)": (
            "session-start",
            session.data("SessionStart", session_id="new", source="startup"),
        ),
        "pre-compact, transcript unchanged, printing the brief": (
            "pre-compact",
            session.data("PreCompact", trigger="auto"),
        ),
    }


def _printed(session: _Session) -> dict[str, int]:
    """What the three injecting cases print (characters), and the records they are built from: a case that printed
    nothing would not measure its brief or repair."""
    inputs = _inputs(session, 0)
    sizes = {}
    for name in (
        COMPACT,
        "session-start (startup, the brief of the earlier session)",
        "pre-compact, transcript unchanged, printing the brief",
    ):
        hook, stdin = inputs[name]
        done = subprocess.run(
            [*CTXKEEP_COMMAND, "hook", hook], input=stdin, capture_output=True, env=session.env, timeout=300
        )
        sizes[name] = len(done.stdout.decode("utf-8"))
    with sqlite3.connect(session.env["CTXKEEP_DB"]) as db:
        (records,) = db.execute(
            "SELECT count(*) FROM session_records WHERE session_id = 's' AND kind != 'hook'"
        ).fetchone()
    return {**sizes, "records": int(records)}


def _until_read(session: _Session) -> float:
    """A pre-compact whose worker ingests the transcript, until session-start (resume, which waits for the worker)
    finds the records: how long the heavy part takes."""
    started = time.perf_counter()
    session.hook("pre-compact", session.data("PreCompact", trigger="auto"))
    session.hook("session-start", session.data("SessionStart", source="resume"))
    return time.perf_counter() - started


def _ingest(session: _Session) -> tuple[float, float]:
    """The first ingest of the transcript, then the compaction Claude Code writes after it (two lines) ingested by the
    next pre-compact: (seconds of the first, seconds of the second). Unchanged from then on."""
    first = _until_read(session)
    with session.transcript.open("a", encoding="utf-8") as out:
        out.write(hook_inputs.compaction())
    return first, _until_read(session)


def _ms(values: list[float]) -> dict[str, float]:
    ms = [v * 1000 for v in values]
    return {"p50_ms": round(statistics.median(ms), 1), "p95_ms": round(percentile(ms, 95), 1), "n": len(ms)}


def run(quick: bool) -> dict[str, Any]:
    if not hook_inputs.available():
        return {
            "title": "Claude Code hooks",
            "rows": [],
            "notes": ["skipped: ../shared/data/claude-code-transcripts is absent"],
        }
    rounds = 7 if quick else 25
    with tempfile.TemporaryDirectory() as tmp:
        session = _Session(Path(tmp))
        first, appended = _ingest(session)
        printed = _printed(session)
        floor: list[tuple[float, float]] = []
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in BUDGETS}
        process_cost(FLOOR_COMMAND, b"", BASE_ENV)
        for use in range(rounds):
            floor.append(process_cost(FLOOR_COMMAND, b"", BASE_ENV))
            for name, (hook, stdin) in _inputs(session, use).items():
                times[name].append(session.hook(hook, stdin))
    wall = {name: [w for w, _ in values] for name, values in times.items()}
    cpu = {name: [c for _, c in values] for name, values in times.items()}
    base, base_cpu = statistics.median(w for w, _ in floor), statistics.median(c for _, c in floor)
    ratios = {name: statistics.median(values) / base for name, values in wall.items()}
    cpu_ratios = {name: statistics.median(values) / base_cpu for name, values in cpu.items()}
    floor_text = (
        f'p50 {base * 1000:.0f} ms, CPU {base_cpu * 1000:.0f} ms: python -c "import json, sqlite3" (same run, '
        "interleaved)"
    )
    rows = [
        {
            "metric": f"{name} (new process)",
            "value": f"wall p50 {_ms(wall[name])['p50_ms']:.0f} / p95 {_ms(wall[name])['p95_ms']:.0f} ms"
            f" = {ratios[name]:.2f}× the floor; CPU {statistics.median(cpu[name]) * 1000:.0f} ms = "
            f"{cpu_ratios[name]:.2f}×",
            "baseline": floor_text,
            "target": f"≤ {BUDGETS[name]}×",
        }
        for name in BUDGETS
    ]
    megabytes = len(hook_inputs.before_compaction().encode()) / 1e6
    rows += [
        {
            "metric": f"pre-compact's first ingest of the {megabytes:.1f} MB transcript (detached worker, until "
            "session-start finds the records)",
            "value": f"{first * 1000:.0f} ms",
            "baseline": "",
            "target": "report",
        },
        {
            "metric": "pre-compact after the compaction's 2 lines were appended (its worker reads what was appended, "
            "until session-start finds the records)",
            "value": f"{appended * 1000:.0f} ms",
            "baseline": f"{first * 1000:.0f} ms (the first ingest, above)",
            "target": "report",
        },
    ]
    return {
        "title": "Claude Code hooks",
        "rows": rows,
        "notes": [
            "Each run is a new process through the installed `ctxkeep` command, as Claude Code starts hooks; the "
            "per-event hooks import only the standard library (and PyStemmer's C extension is not among them).",
            f"Inputs (`bench/hook_inputs.py`): the session is the shared transcript `4d5611e5…` up to its compaction "
            f"({megabytes:.1f} MB, {printed['records']} records), then that compaction's own "
            f"{hook_inputs.summary_chars():,}-character summary; {hook_inputs.describe()}; the store holds "
            f"{hook_inputs.EVIDENCE_ITEMS:,} evidence items and a task saved {hook_inputs.TASK_VERSIONS} times.",
        ],
        "raw": {
            "floor": _ms([w for w, _ in floor]),
            "floor_cpu": _ms([c for _, c in floor]),
            "hooks": {name: _ms(values) for name, values in wall.items()},
            "hooks_cpu": {name: _ms(values) for name, values in cpu.items()},
            "ratios": ratios,
            "cpu_ratios": cpu_ratios,
            "ingest_ms": round(first * 1000),
            "appended_ingest_ms": round(appended * 1000),
            "printed_chars": printed,
        },
        "checks": {
            **{f"{name} within {BUDGETS[name]}x": ratios[name] <= BUDGETS[name] for name in BUDGETS},
            "the repair and both briefs printed": all(printed[name] > 0 for name in printed),
        },
    }
