"""checkpoint_save / checkpoint_load latency over real stdio, for a task with 1,000 versions.

Each version's state is built from real agent prose (the shared SWE-bench runs): a sliding
window of completed steps (the one leaving it listed in dropped), the next steps pending, a few
exact facts and an approval, so a state weighs a few KB like a real one. Baseline in the same run, on the same
connection: the cheapest tool call there is, checkpoint_list(limit=1) (the 2026 protocol has no ping), the floor any
tool call pays for JSON-RPC, validation and stdio.
"""

from __future__ import annotations

import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import summary_ms, swe_lines
from bench.rpc import RawServer


def _states(count: int) -> list[dict[str, Any]]:
    lines = swe_lines(count + 60) or [f"Step {i}: inspect module {i % 37} and run its tests" for i in range(count + 60)]

    def line(i: int) -> str:  # real lines, numbered so a cycle through a short corpus stays distinct
        return f"{i}. {lines[i % len(lines)]}"

    return [
        {
            "goal": "Fix the reported bug so the failing tests pass without breaking others",
            "constraints": ["Do not modify the tests", "Keep the public API unchanged"],
            "completed": [line(j) for j in range(max(0, i - 30), i + 1)],
            # the step leaving the window is archived, as an agent with a long log would (completed_dropped otherwise)
            "dropped": [{"kind": "completed", "item": line(i - 31), "reason": "archived to the step log"}]
            if i > 30
            else [],
            "pending": [line(j) for j in range(i + 1, i + 6)],
            "decisions": ["Reproduce first, then patch the smallest surface"],
            "facts": [
                {"key": "failing tests", "value": 3 + i % 5, "source_ref": f"test-run-{i}"},
                {"key": "step", "value": i, "source_ref": f"log-{i}"},
            ],
            "approvals": [{"id": "merge", "action": "merge the patch", "status": "pending"}],
            "next_action": line(i + 1),
        }
        for i in range(count)
    ]


def _timed(server: RawServer, tool: str, arguments: dict[str, Any], into: list[float]) -> dict[str, Any]:
    started = time.perf_counter()
    result = server.call_tool(tool, arguments)
    into.append(time.perf_counter() - started)
    return result


def _measure(count: int, loads: int) -> dict[str, Any]:
    states = _states(count)
    saves: list[float] = []
    load_times: list[float] = []
    floor: list[float] = []
    with tempfile.TemporaryDirectory() as tmp, RawServer(Path(tmp) / "bench.db", tmp) as server:
        for version, state in enumerate(states, start=1):
            _timed(
                server, "checkpoint_save", {"task_id": "bench", "state": state, "expected_version": version - 1}, saves
            )
            _timed(server, "checkpoint_list", {"limit": 1}, floor)
        rng = random.Random(1)
        for _ in range(loads):
            arguments: dict[str, Any] = {"task_id": "bench"}
            if rng.random() < 0.5:
                arguments["version"] = rng.randint(1, count)
            _timed(server, "checkpoint_load", arguments, load_times)
    return {
        "save": summary_ms(saves),
        "load": summary_ms(load_times),
        "floor": summary_ms(floor),
        "state_bytes": len(json.dumps(states[-1]).encode()),
    }


def run(quick: bool) -> dict[str, Any]:
    count, loads = (200, 200) if quick else (1000, 1000)
    m = _measure(count, loads)
    ping = f"{m['floor']['p50_ms']:.2f} / {m['floor']['p95_ms']:.2f} ms (checkpoint_list limit=1)"
    return {
        "title": f"Checkpoints over stdio, one task with {count:,} versions",
        "rows": [
            {
                "metric": "checkpoint_save p50 / p95",
                "value": f"{m['save']['p50_ms']:.2f} / {m['save']['p95_ms']:.2f} ms",
                "baseline": ping,
                "target": "p50 ≤ 5 ms",
            },
            {
                "metric": "checkpoint_load p50 / p95",
                "value": f"{m['load']['p50_ms']:.2f} / {m['load']['p95_ms']:.2f} ms",
                "baseline": ping,
                "target": "p50 ≤ 5 ms",
            },
            {
                "metric": "save p50 / floor p50",
                "value": f"{m['save']['p50_ms'] / m['floor']['p50_ms']:.1f}×",
                "baseline": "1×",
                "target": "",
            },
        ],
        "notes": [
            "measured with a raw JSON-RPC client on the server's stdin/stdout (the Python SDK client adds its own "
            "jsonschema validation of every result, ~2-5 ms, which is client cost, not server cost)",
            f"state size ~{m['state_bytes']:,} bytes; every save verified against the previous version and hash-chained",
        ],
        "raw": m,
    }
