"""The other clients' hooks: wall time of each `ctxkeep hook <client> <event>` as the client runs it, as a ratio to the
same-run floor, next to Claude Code's own hooks measured the same way (bench/hooks.py's method).

Every run is a new process through the installed `ctxkeep` command with the event's JSON on stdin, timed from spawn to
exit (wall, and the CPU time the process used); the floor is `python -c "import json, sqlite3"`, interleaved round by
round with the hooks so a noisy moment of the shared machine hits all of them alike. The inputs are real
(`bench/hook_inputs.py`): each client's session first takes in the prompts people typed and the Bash calls (command and
output) of all the shared Claude Code sessions, up to 300 of each (100 with --quick), through its own prompt and
tool-call hooks; the measured tool calls are a real 1.7 KB output (passed through) and the first 100 KB of the largest
one (offloaded); the store beside the sessions holds 10,000 evidence items and a task saved 100 times. A new
session's start (`startup`) builds the brief of the earlier session; a resume injects the records' view. Budgets
(DESIGN.md, as for Claude Code): per-tool-call and per-prompt hooks ≤ 2×, offloading 100 KB ≤ 4×, session start
≤ 2.5×.

    python -m bench.client_hooks        # prints the rows (not written to RESULTS.md)
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench import hook_inputs
from bench.common import BASE_ENV, CTXKEEP_COMMAND, FLOOR_COMMAND, process_cost

BUDGETS = {
    "tool call, a real 1.7 KB output": 2.0,
    "tool call, a real 100 KB output (offloaded)": 4.0,
    "prompt": 2.0,
    "stop": 2.0,
    "session start (resume)": 2.5,
    "session start (startup, the earlier session's brief)": 2.5,
}
CLIENTS = ("claude-code", "codex", "gemini")


def _tool(client: str, command: str, response: dict[str, Any], use: str) -> tuple[list[str], dict[str, Any]]:
    """A Bash call as `client` sends it: Claude Code's tool_response object, Codex's output text, Gemini's llmContent."""
    text = response["stdout"] + (("\n" + response["stderr"]) if response["stderr"] else "")
    if client == "codex":
        return ["codex", "PostToolUse"], {
            "tool_name": "Bash",
            "tool_input": {"command": command},
            "tool_response": text,
            "tool_use_id": use,
        }
    if client == "gemini":
        return ["gemini", "AfterTool"], {
            "tool_name": "run_shell_command",
            "tool_input": {"command": command},
            "tool_response": {"llmContent": text},
        }
    return ["post-tool-use"], {
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": use,
        "tool_response": response,
    }


def _event(client: str, event: str) -> list[str]:
    names = {
        "claude-code": {"prompt": "user-prompt-submit", "stop": "stop", "start": "session-start"},
        "codex": {"prompt": "UserPromptSubmit", "stop": "Stop", "start": "SessionStart"},
        "gemini": {"prompt": "BeforeAgent", "stop": "AfterAgent", "start": "SessionStart"},
    }
    return ([] if client == "claude-code" else [client]) + [names[client][event]]


def _inputs(project: str, use: int) -> dict[str, dict[str, tuple[list[str], dict[str, Any]]]]:
    """client -> measure -> (hook args, stdin)."""
    outputs = hook_inputs.outputs()
    measures: dict[str, dict[str, tuple[list[str], dict[str, Any]]]] = {}
    for client in CLIENTS:
        s = {"session_id": f"s-{client}", "cwd": project}
        small_args, small = _tool(client, *outputs["2 KB"], f"small{use}")
        big_args, big = _tool(client, *outputs["100 KB"], f"big{use}")
        measures[client] = {
            "tool call, a real 1.7 KB output": (small_args, s | small),
            "tool call, a real 100 KB output (offloaded)": (big_args, s | big),
            "prompt": (_event(client, "prompt"), s | {"prompt": f"never touch the vendored libs ({use})"}),
            "stop": (_event(client, "stop"), s | {"stop_hook_active": True}),
            "session start (resume)": (_event(client, "start"), s | {"source": "resume"}),
            "session start (startup, the earlier session's brief)": (
                _event(client, "start"),
                {"session_id": f"new-{client}", "cwd": project, "source": "startup"},
            ),
        }
    return measures


def _seed(project: str, env: dict[str, str], limit: int) -> dict[str, int]:
    """The real prompts and Bash calls through each client's own hooks, in its session `s-<client>`; how many of
    each."""
    prompts, calls = hook_inputs.session_events(limit)
    for client in CLIENTS:
        stdins = [(_event(client, "prompt"), {"prompt": p}) for p in prompts]
        stdins += [_tool(client, command, response, f"seed{n}") for n, (command, response) in enumerate(calls)]
        for args, stdin in stdins:
            subprocess.run(
                [*CTXKEEP_COMMAND, "hook", *args],
                input=json.dumps({"session_id": f"s-{client}", "cwd": project, **stdin}).encode(),
                capture_output=True,
                env=env,
                timeout=120,
            )
    return {"prompts": len(prompts), "tool calls": len(calls)}


def run(quick: bool) -> dict[str, Any]:
    if not hook_inputs.available():
        return {"title": "Other clients' hooks", "rows": [], "notes": ["skipped: ../shared/data is absent"]}
    rounds = 7 if quick else 25
    with tempfile.TemporaryDirectory() as tmp:
        project = str(Path(tmp) / "project")
        Path(project).mkdir()
        env = {
            **BASE_ENV,
            "HOME": tmp,
            "CTXKEEP_DB": str(Path(tmp) / "ctxkeep.db"),
            "CTXKEEP_PROJECT": project,
            "CTXKEEP_START_BRIEF_DAYS": "100000",
        }
        hook_inputs.build_store(Path(env["CTXKEEP_DB"]), os.path.realpath(project))
        seeded = _seed(project, env, 100 if quick else 300)
        floor: list[tuple[float, float]] = []
        times: dict[tuple[str, str], list[tuple[float, float]]] = {}
        for use in range(rounds):
            floor.append(process_cost(FLOOR_COMMAND, b"", BASE_ENV))
            for client, measures in _inputs(project, use).items():
                for name, (args, stdin) in measures.items():
                    times.setdefault((client, name), []).append(
                        process_cost([*CTXKEEP_COMMAND, "hook", *args], json.dumps(stdin).encode(), env)
                    )
    base, base_cpu = statistics.median(w for w, _ in floor), statistics.median(c for _, c in floor)
    ratio = {key: statistics.median(w for w, _ in v) / base for key, v in times.items()}
    cpu = {key: statistics.median(c for _, c in v) for key, v in times.items()}
    rows = [
        {
            "metric": f"{client}: {name} (new process)",
            "value": f"wall p50 {statistics.median(w for w, _ in v) * 1000:.0f} ms = {ratio[(client, name)]:.2f}× the "
            f"floor; CPU {cpu[(client, name)] * 1000:.0f} ms = {cpu[(client, name)] / base_cpu:.2f}×",
            "baseline": f'p50 {base * 1000:.0f} ms, CPU {base_cpu * 1000:.0f} ms: python -c "import json, sqlite3"',
            "target": f"≤ {BUDGETS[name]}×",
        }
        for (client, name), v in times.items()
    ]
    return {
        "title": "Other clients' hooks",
        "rows": rows,
        "notes": [
            "Claude Code's rows measured in the same run, for comparison.",
            f"Each session took in {seeded['prompts']} real prompts and {seeded['tool calls']} real Bash calls of the "
            f"shared sessions first; {hook_inputs.describe()}; the store holds {hook_inputs.EVIDENCE_ITEMS:,} evidence "
            f"items and a task saved {hook_inputs.TASK_VERSIONS} times.",
        ],
        "raw": {
            "floor_ms": round(base * 1000, 1),
            "floor_cpu_ms": round(base_cpu * 1000, 1),
            "ratios": {f"{c}: {n}": r for (c, n), r in ratio.items()},
            "cpu_ratios": {f"{c}: {n}": cpu[(c, n)] / base_cpu for (c, n) in cpu},
            "seeded": seeded,
        },
        "checks": {f"{c}: {n} within {BUDGETS[n]}x": ratio[(c, n)] <= BUDGETS[n] for (c, n) in times},
    }


if __name__ == "__main__":
    result = run(quick="--full" not in sys.argv)
    for row in result["rows"]:
        print(f"{row['metric']:<72} {row['value']:<60} {row['target']}")
    print(f"floor: {result['rows'][0]['baseline']}")
