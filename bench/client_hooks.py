"""The other clients' hooks: wall time of each `ctxkeep hook <client> <event>` as the client runs it, as a ratio to the
same-run floor, next to Claude Code's own hooks measured the same way (bench/hooks.py's method).

Every run is a new process through the installed `ctxkeep` command with the event's JSON on stdin, timed from spawn to
exit; the floor is `python -c "import json, sqlite3"`, interleaved round by round with the hooks so a noisy moment of
the shared machine hits all of them alike. The session holds 300 prompts and 300 tool calls' records first. Budgets
(DESIGN.md, as for Claude Code): per-tool-call and per-prompt hooks ≤ 2×, offloading 100 KB ≤ 4×, session start ≤ 2.5×.

    python -m bench.client_hooks        # prints the rows (not written to RESULTS.md)
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import BASE_ENV, CTXKEEP_COMMAND, FLOOR_COMMAND, process_seconds

SMALL = "src/a.py\nsrc/b.py\n"
BIG = "\n".join(f"{n:06d} compiled module_{n}.o in 0.{n % 97:02d}s" for n in range(3_000))[:100_000]
BUDGETS = {"tool call": 2.0, "offloading 100 KB": 4.0, "prompt": 2.0, "stop": 2.0, "session start (resume)": 2.5}


def _inputs(project: str, use: int) -> dict[str, dict[str, tuple[list[str], dict[str, Any]]]]:
    """client -> measure -> (hook args, stdin)."""
    s = {"session_id": "s", "cwd": project}
    return {
        "claude-code": {
            "tool call": (
                ["post-tool-use"],
                s
                | {
                    "tool_name": "Bash",
                    "tool_input": {"command": "ls src"},
                    "tool_use_id": f"a{use}",
                    "tool_response": {"stdout": SMALL, "stderr": "", "interrupted": False},
                },
            ),
            "offloading 100 KB": (
                ["post-tool-use"],
                s
                | {
                    "tool_name": "Bash",
                    "tool_input": {"command": "make"},
                    "tool_use_id": f"b{use}",
                    "tool_response": {"stdout": BIG, "stderr": "", "interrupted": False},
                },
            ),
            "prompt": (["user-prompt-submit"], s | {"prompt": f"never touch the vendored libs ({use})"}),
            "stop": (["stop"], s | {"stop_hook_active": True}),
            "session start (resume)": (["session-start"], s | {"source": "resume"}),
        },
        "codex": {
            "tool call": (
                ["codex", "PostToolUse"],
                s
                | {
                    "tool_name": "Bash",
                    "tool_input": {"command": "ls src"},
                    "tool_response": SMALL,
                    "tool_use_id": f"c{use}",
                },
            ),
            "offloading 100 KB": (
                ["codex", "PostToolUse"],
                s
                | {
                    "tool_name": "Bash",
                    "tool_input": {"command": "make"},
                    "tool_response": BIG,
                    "tool_use_id": f"d{use}",
                },
            ),
            "prompt": (["codex", "UserPromptSubmit"], s | {"prompt": f"never touch the vendored libs ({use})"}),
            "stop": (["codex", "Stop"], s | {"stop_hook_active": True}),
            "session start (resume)": (["codex", "SessionStart"], s | {"source": "resume"}),
        },
        "gemini": {
            "tool call": (
                ["gemini", "AfterTool"],
                s
                | {
                    "tool_name": "run_shell_command",
                    "tool_input": {"command": "ls src"},
                    "tool_response": {"llmContent": SMALL},
                },
            ),
            "offloading 100 KB": (
                ["gemini", "AfterTool"],
                s
                | {
                    "tool_name": "run_shell_command",
                    "tool_input": {"command": "make"},
                    "tool_response": {"llmContent": BIG},
                },
            ),
            "prompt": (["gemini", "BeforeAgent"], s | {"prompt": f"never touch the vendored libs ({use})"}),
            "stop": (["gemini", "AfterAgent"], s | {"stop_hook_active": True}),
            "session start (resume)": (["gemini", "SessionStart"], s | {"source": "resume"}),
        },
    }


def _seed(project: str, env: dict[str, str]) -> None:
    """300 prompts and 300 tool calls in each client's session, so the hooks work on a session of some size."""
    for n in range(300):
        for measures in _inputs(project, 10_000 + n).values():
            for name in ("prompt", "tool call"):
                args, stdin = measures[name]
                subprocess.run(
                    [*CTXKEEP_COMMAND, "hook", *args],
                    input=json.dumps(stdin).encode(),
                    capture_output=True,
                    env=env,
                    timeout=60,
                )


def run(quick: bool) -> dict[str, Any]:
    rounds = 7 if quick else 25
    with tempfile.TemporaryDirectory() as tmp:
        project = str(Path(tmp) / "project")
        Path(project).mkdir()
        env = {**BASE_ENV, "HOME": tmp, "CTXKEEP_DB": str(Path(tmp) / "ctxkeep.db"), "CTXKEEP_PROJECT": project}
        _seed(project, env)
        floor: list[float] = []
        times: dict[tuple[str, str], list[float]] = {}
        for use in range(rounds):
            floor.append(process_seconds(FLOOR_COMMAND, b"", BASE_ENV))
            for client, measures in _inputs(project, use).items():
                for name, (args, stdin) in measures.items():
                    times.setdefault((client, name), []).append(
                        process_seconds([*CTXKEEP_COMMAND, "hook", *args], json.dumps(stdin).encode(), env)
                    )
    base = statistics.median(floor)
    rows = [
        {
            "metric": f"{client}: {name} (wall, new process)",
            "value": f"p50 {statistics.median(v) * 1000:.0f} ms = {statistics.median(v) / base:.2f}× the floor",
            "baseline": f'p50 {base * 1000:.0f} ms: python -c "import json, sqlite3"',
            "target": f"≤ {BUDGETS[name]}×",
        }
        for (client, name), v in times.items()
    ]
    return {
        "title": "Other clients' hooks",
        "rows": rows,
        "notes": ["Claude Code's rows measured in the same run, for comparison."],
        "checks": {
            f"{c}: {n} within {BUDGETS[n]}x": statistics.median(v) / base <= BUDGETS[n] for (c, n), v in times.items()
        },
    }


if __name__ == "__main__":
    result = run(quick="--full" not in sys.argv)
    for row in result["rows"]:
        print(f"{row['metric']:<52} {row['value']:<28} {row['target']}")
    print(f"floor: {result['rows'][0]['baseline']}")
