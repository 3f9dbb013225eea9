"""Time from process start to the initialize response of `ctxkeep serve` (raw JSON-RPC on stdio).

Baseline in the same run: a bare interpreter importing the MCP SDK's server class, the floor
any Python MCPServer pays before it can answer.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

INITIALIZE = (
    json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "0"},
            },
        }
    )
    + "\n"
)


def _ready_seconds(db: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxkeep", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "CTXKEEP_DB": str(db)},
    )
    assert proc.stdin and proc.stdout
    proc.stdin.write(INITIALIZE.encode())
    proc.stdin.flush()
    answer = proc.stdout.readline()
    elapsed = time.perf_counter() - started
    proc.kill()
    proc.wait()
    assert b'"result"' in answer, answer
    return elapsed


def _sdk_import_seconds() -> float:
    """Until a bare interpreter has imported MCPServer and says so (process exit is not counted)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", "from mcp.server.mcpserver import MCPServer; print('ready', flush=True)"],
        stdout=subprocess.PIPE,
    )
    assert proc.stdout
    line = proc.stdout.readline()
    elapsed = time.perf_counter() - started
    proc.kill()
    proc.wait()
    assert line.strip() == b"ready"
    return elapsed


def run(quick: bool) -> dict[str, Any]:
    rounds = 5 if quick else 15
    ready, floor = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(rounds):  # interleaved, so drift on a shared machine hits both alike
            ready.append(_ready_seconds(Path(tmp) / "s.db"))
            floor.append(_sdk_import_seconds())
    ours, sdk = statistics.median(ready), statistics.median(floor)
    return {
        "title": "Server start-up to initialize response",
        "rows": [
            {
                "metric": "start → initialize response, median",
                "value": f"{ours * 1000:.0f} ms",
                "baseline": f"{sdk * 1000:.0f} ms (python -c 'import MCPServer')",
                "target": "≤ 1,000 ms",
            },
            {
                "metric": "ctxkeep's own share (median difference)",
                "value": f"{(ours - sdk) * 1000:.0f} ms",
                "baseline": "",
                "target": "",
            },
        ],
        "notes": [f"{rounds} runs each; tiktoken is not loaded at start-up (first use loads it)"],
        "raw": {"ready_s": ready, "sdk_import_s": floor},
    }
