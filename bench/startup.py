"""Server start-up: from process start to the `initialize` answer, to the `tools/list` answer, and the first tool call.

The floor is a one-tool MCPServer on the same SDK (bench/one_tool_server.py), started the same way in the same run:
a new interpreter with the same environment and pipes, driven by the same raw JSON-RPC client (one line out, one
line back). Runs are interleaved (ctxkeep, floor; then floor, ctxkeep) so drift on a shared machine hits both
alike; the rows are medians and the ratio of the medians. The first tool call is `checkpoint_list` on an empty
database for ctxkeep (it loads the tools, the models and the store) and `ping` for the floor.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from bench.common import BASE_ENV, CTXKEEP_COMMAND

PROTOCOL = "2025-06-18"
FLOOR_COMMAND = [sys.executable, str(Path(__file__).resolve().parent / "one_tool_server.py")]


class Server(NamedTuple):
    """How to start one server, and the tool call that counts as its first."""

    command: list[str]
    tool: str
    arguments: dict[str, Any]


class Startup(NamedTuple):
    """Seconds from spawn to the initialize answer and to the tools/list answer; the first tools/call's own time; the
    CPU seconds the server process had used when its initialize answer arrived (steadier than wall time on a loaded
    machine; Linux only, else 0)."""

    initialize: float
    tools_list: float
    first_call: float
    initialize_cpu: float


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds process `pid` has used so far (/proc; 0.0 where there is none)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _answer(proc: subprocess.Popen[bytes], request_id: int) -> dict[str, Any]:
    assert proc.stdout is not None
    while True:
        line = proc.stdout.readline()
        assert line, f"the server exited before answering request {request_id}"
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == request_id:
            return message


def start_once(server: Server, env: dict[str, str]) -> Startup:
    """One start of `server`: initialize, tools/list, one tools/call, each answered with a result."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        server.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env
    )
    assert proc.stdin is not None
    try:
        params = {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}}
        proc.stdin.write(_line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params}))
        proc.stdin.flush()
        assert "result" in _answer(proc, 1)
        initialized = time.perf_counter()
        cpu = _cpu_seconds(proc.pid)
        proc.stdin.write(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        proc.stdin.write(_line({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}))
        proc.stdin.flush()
        assert _answer(proc, 2)["result"]["tools"]
        listed = time.perf_counter()
        call = {"name": server.tool, "arguments": server.arguments}
        proc.stdin.write(_line({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": call}))
        proc.stdin.flush()
        result = _answer(proc, 3)["result"]
        called = time.perf_counter()
        assert not result.get("isError"), result
    finally:
        proc.kill()
        proc.wait()
    return Startup(initialized - started, listed - started, called - listed, cpu)


def interleaved(servers: dict[str, Server], rounds: int, env: dict[str, str]) -> dict[str, list[Startup]]:
    """`rounds` starts of each server, alternating the order every round."""
    runs: dict[str, list[Startup]] = {name: [] for name in servers}
    names = list(servers)
    for round_ in range(rounds):
        for name in names if round_ % 2 == 0 else reversed(names):
            runs[name].append(start_once(servers[name], env))
    return runs


def medians(runs: Sequence[Startup]) -> Startup:
    return Startup(*(statistics.median(getattr(run, field) for run in runs) for field in Startup._fields))


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def run(quick: bool) -> dict[str, Any]:
    rounds = 7 if quick else 21
    with tempfile.TemporaryDirectory() as tmp:
        env = {**BASE_ENV, "CTXKEEP_DB": str(Path(tmp) / "s.db"), "CTXKEEP_PROJECT": "/bench/startup"}
        servers = {
            "ctxkeep": Server(CTXKEEP_COMMAND + ["serve"], "checkpoint_list", {}),
            "floor": Server(FLOOR_COMMAND, "ping", {}),
        }
        start_once(servers["ctxkeep"], env)  # the database file and its schema exist from here on, as for a user
        runs = interleaved(servers, rounds, env)
    ours, floor = medians(runs["ctxkeep"]), medians(runs["floor"])
    ratio = [
        statistics.median(a.initialize / b.initialize for a, b in zip(runs["ctxkeep"], runs["floor"], strict=True))
    ]
    return {
        "title": "Server start-up: initialize, tools/list, first tool call",
        "rows": [
            {
                "metric": "start → initialize answer, median",
                "value": _ms(ours.initialize),
                "baseline": f"{_ms(floor.initialize)} (one-tool MCPServer, same SDK)",
                "target": "",
            },
            {
                "metric": "start → initialize: ratio to the one-tool server",
                "value": f"{ours.initialize / floor.initialize:.2f}×",
                "baseline": f"{ratio[0]:.2f}× (median of per-round ratios)",
                "target": "≤ 1.15×",
            },
            {
                "metric": "start → tools/list answer, median",
                "value": _ms(ours.tools_list),
                "baseline": f"{_ms(floor.tools_list)} ({ours.tools_list / floor.tools_list:.2f}×)",
                "target": "",
            },
            {
                "metric": "first tool call (checkpoint_list; the floor's ping), median",
                "value": _ms(ours.first_call),
                "baseline": _ms(floor.first_call),
                "target": "",
            },
        ],
        "notes": [
            f"{rounds} starts of each, interleaved (order alternating), a database with its schema already made; "
            f"load average at the end {os.getloadavg()[0]:.1f}",
            "initialize is answered before the models, the storage and the tool functions are imported: the first "
            "tool call (or resource or prompt read) loads them and opens the database; tools/list is served from "
            "the advertised definitions kept in ctxkeep/server/advertised.json",
        ],
        "raw": {name: [run._asdict() for run in values] for name, values in runs.items()},
    }
