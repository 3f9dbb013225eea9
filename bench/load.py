"""Load: 4 clients × 500 mixed operations on one database file, as two Claude Code sessions and a CLI would be.

Two clients share one `ctxkeep serve --http` server (two sessions); two more each run their own
`ctxkeep serve` over stdio. Each client saves its own task (expected_version chained), saves a
shared task too (conflicts with the others are expected and documented), puts and searches
evidence, writes memories, journals side effects and builds working sets. Afterwards every
acknowledged write is counted in the file, and any error other than a version conflict fails
the run. Reported: latency percentiles per operation, over the pipes / HTTP, all clients at once.
"""

from __future__ import annotations

import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from bench.common import free_port, summary_ms, wait_for_port

PROJECT = "/bench/load"


def _env(db: Path) -> dict[str, str]:
    return {
        "CTXKEEP_DB": str(db),
        "CTXKEEP_PROJECT": PROJECT,
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", "/tmp"),
    }


async def _client(
    name: str, client: Client, ops: int, times: dict[str, list[float]], acks: Counter[str], errors: list[str]
) -> None:
    rng = random.Random(name)
    version = 0
    for i in range(ops):
        op = rng.choice(["save", "save", "shared", "put", "search", "memory", "journal", "working_set"])
        started = time.perf_counter()
        if op == "save":
            args = {
                "task_id": f"task-{name}",
                "expected_version": version,
                "state": {"goal": f"Load test of {name}", "completed": [f"step {j}" for j in range(version + 1)]},
            }
            result = await client.call_tool("checkpoint_save", args)
        elif op == "shared":
            result = await client.call_tool(
                "checkpoint_save",
                {"task_id": "shared", "state": {"goal": "Shared", "decisions": [f"{name} {i}"]}, "strict": False},
            )
        elif op == "put":
            result = await client.call_tool(
                "evidence_put", {"content": f"{name} record {i}: " + "load " * 100, "task_id": f"task-{name}"}
            )
        elif op == "search":
            result = await client.call_tool("evidence_search", {"query": f"{name} record"})
        elif op == "memory":
            result = await client.call_tool(
                "memory_write",
                {
                    "kind": "user_preference",
                    "key": f"{name}-{i}",
                    "content": f"{name} likes {i}",
                    "explicit_confirmation": True,
                    "source_message_id": f"m-{i}",
                },
            )
        elif op == "journal":
            key = f"load:{name}-{i}:send"
            result = await client.call_tool(
                "action_intent",
                {"task_id": f"task-{name}", "idempotency_key": key, "action": "send", "target": f"item {i}"},
            )
            if not result.is_error:
                result = await client.call_tool("action_result", {"idempotency_key": key, "status": "succeeded"})
        else:
            result = await client.call_tool("build_working_set", {"task_id": f"task-{name}", "budget_tokens": 2000})
        times[op].append(time.perf_counter() - started)
        text = " ".join(getattr(c, "text", "") for c in result.content)
        if result.is_error:
            if op in ("working_set", "journal") and "no task" in text:
                continue  # the client's task is not saved yet: a documented refusal
            errors.append(f"{name} {op}: {text[:200]}")
            continue
        if op == "save":
            version = int(result.structured_content["version"])
        acks[op] += 1
        acks[f"{op}:{name}"] += 1


async def _measure(folder: Path, ops: int) -> dict[str, Any]:
    db = folder / "load.db"
    port = free_port()
    http = subprocess.Popen(
        [sys.executable, "-m", "ctxkeep", "serve", "--http", "--no-token", "--port", str(port)],
        env=_env(db),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    times: dict[str, list[float]] = defaultdict(list)
    acks: Counter[str] = Counter()
    errors: list[str] = []
    try:
        wait_for_port(port)
        async with AsyncExitStack() as stack:
            clients = {
                name: await stack.enter_async_context(Client(f"http://127.0.0.1:{port}/mcp"))
                for name in ("http-a", "http-b")
            }
            for name in ("stdio-c", "stdio-d"):
                params = StdioServerParameters(command=sys.executable, args=["-m", "ctxkeep", "serve"], env=_env(db))
                clients[name] = await stack.enter_async_context(Client(params))
            started = time.perf_counter()
            async with anyio.create_task_group() as group:
                for name, client in clients.items():
                    group.start_soon(_client, name, client, ops, times, acks, errors)
            wall = time.perf_counter() - started
    finally:
        http.terminate()
        http.wait(timeout=30)
    return {"times": times, "acks": acks, "errors": errors, "wall": wall, "db": db}


def _verify(db: Path, acks: Counter[str], names: list[str]) -> dict[str, int]:
    """Every acknowledged write is in the file; returns what was counted."""
    with sqlite3.connect(db) as conn:
        one = lambda sql, *args: conn.execute(sql, args).fetchone()[0]  # noqa: E731
        assert one("PRAGMA integrity_check") == "ok"
        for name in names:
            saves = acks[f"save:{name}"]
            assert (
                one(
                    "SELECT COALESCE(MAX(version), 0) FROM checkpoints WHERE project = ? AND task_id = ?",
                    PROJECT,
                    f"task-{name}",
                )
                == saves
            )
            assert (
                one("SELECT count(*) FROM evidence WHERE project = ? AND task_id = ?", PROJECT, f"task-{name}")
                == acks[f"put:{name}"]
            )
        counted = {
            "memories": one("SELECT count(*) FROM memories"),
            "results": one("SELECT count(*) FROM actions WHERE status = 'succeeded'"),
            "shared versions": one("SELECT COALESCE(MAX(version), 0) FROM checkpoints WHERE task_id = 'shared'"),
        }
    assert counted["memories"] == acks["memory"] and counted["results"] == acks["journal"]
    assert counted["shared versions"] <= acks["shared"]  # identical states are stored once
    return counted


def load(folder: Path, ops: int) -> dict[str, Any]:
    """Run the load and check it; raises AssertionError when a write was lost or an undocumented error occurred."""
    measured = anyio.run(_measure, folder, ops)
    assert not measured["errors"], measured["errors"][:5]
    counted = _verify(measured["db"], measured["acks"], ["http-a", "http-b", "stdio-c", "stdio-d"])
    return {
        "times": {op: summary_ms(values) for op, values in sorted(measured["times"].items())},
        "counted": counted,
        "operations": sum(len(v) for v in measured["times"].values()),
        "wall_s": round(measured["wall"], 1),
    }


def run(quick: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        result = load(Path(tmp), 100 if quick else 500)
    rows = [
        {
            "metric": f"{op} under load (4 clients at once), p50 / p95",
            "value": f"{t['p50_ms']} / {t['p95_ms']} ms (n={t['n']})",
            "baseline": "",
            "target": "",
        }
        for op, t in result["times"].items()
    ]
    rows.insert(
        0,
        {
            "metric": "4 clients × mixed operations on one file: errors other than documented conflicts, lost writes",
            "value": f"0 and 0 of {result['operations']} operations in {result['wall_s']} s",
            "baseline": "",
            "target": "0 and 0",
        },
    )
    return {
        "title": "Load",
        "rows": rows,
        "notes": [
            "Two clients on one `serve --http` server, two on their own stdio servers, one SQLite file; every acknowledged write "
            "counted in the file afterwards."
        ],
        "raw": result,
    }
