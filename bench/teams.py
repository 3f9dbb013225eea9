"""Teams: the SQLite file and the PostgreSQL store side by side, in one run, on the same data and the same machine.

Per store: checkpoint_save / checkpoint_load p50 over stdio (a task with 1,000 versions; floor: checkpoint_list);
evidence_search and build_working_set p50 with 100,000 real-text items; the LoCoMo retrieval of bench/working_set.py
(PostgreSQL must be within 0.02 of SQLite); a load of two `serve --http` processes × four clients with per-user
tokens (each write recorded as its user), every acknowledged write counted in the database afterwards; and 1 vs 3
servers under a per-task and a per-project mix, with the lock figure and the CPU split (bench/team_load.py).

PostgreSQL: CTXKEEP_BENCH_POSTGRES_URL or CTXKEEP_TEST_POSTGRES_URL (each measurement in a fresh schema, dropped
afterwards); without one, a throwaway server is started with .ci/postgres when the PostgreSQL binaries are there, else
only SQLite is measured and a note says so. Run alone: python -m bench.teams [--quick] (prints JSON, writes nothing).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import anyio
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from bench.checkpoint import _states, _timed
from bench.common import ROOT, free_port, summary_ms, wait_for_port
from bench.evidence import _fill, _questions
from bench.load import _client
from bench import team_load
from bench.rpc import RawServer
from ctxkeep.storage import open_store
from ctxkeep.tools.users import create_token

PROJECT = "/bench/teams"
LOAD_PROJECT = "/bench/load"


async def _sql(url: str, statement: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute(statement)
    finally:
        await conn.close()


@contextmanager
def _server() -> Iterator[str | None]:
    """A PostgreSQL server URL: the configured one, a throwaway one, or None."""
    url = os.environ.get("CTXKEEP_BENCH_POSTGRES_URL") or os.environ.get("CTXKEEP_TEST_POSTGRES_URL")
    if url:
        yield url
        return
    with tempfile.TemporaryDirectory(prefix="ctxkeep-bench-pg-") as folder:
        os.chmod(folder, 0o711)
        started = subprocess.run(
            ["bash", str(ROOT / ".ci" / "postgres"), "start", f"{folder}/pg"], capture_output=True, text=True
        )
        if started.returncode != 0:
            yield None
            return
        try:
            yield started.stdout.strip()
        finally:
            subprocess.run(["bash", str(ROOT / ".ci" / "postgres"), "stop", f"{folder}/pg"], capture_output=True)


@contextmanager
def _database(kind: str, server: str | None, folder: Path) -> Iterator[Path | str]:
    """A fresh database of the kind: a new SQLite file, or a new schema of the server (dropped afterwards)."""
    if kind == "sqlite":
        yield folder / f"{secrets.token_hex(4)}.db"
        return
    assert server is not None
    schema = f"bench_{secrets.token_hex(4)}"
    asyncio.run(_sql(server, f"CREATE SCHEMA {schema}"))
    try:
        yield f"{server}{'&' if '?' in server else '?'}search_path={schema}"
    finally:
        asyncio.run(_sql(server, f"DROP SCHEMA {schema} CASCADE"))


def _checkpoints(location: Path | str, count: int, loads: int) -> dict[str, Any]:
    saves: list[float] = []
    load_times: list[float] = []
    floor: list[float] = []
    rng = random.Random(1)
    with RawServer(location, PROJECT) as server:  # type: ignore[arg-type]
        for version, state in enumerate(_states(count), start=1):
            _timed(
                server,
                "checkpoint_save",
                {"task_id": "bench", "state": state, "expected_version": version - 1, "strict": False},
                saves,
            )
            _timed(server, "checkpoint_list", {"limit": 1}, floor)
        for _ in range(loads):
            arguments: dict[str, Any] = {
                "task_id": "bench",
                **({"version": rng.randint(1, count)} if rng.random() < 0.5 else {}),
            }
            _timed(server, "checkpoint_load", arguments, load_times)
    return {"save": summary_ms(saves), "load": summary_ms(load_times), "floor": summary_ms(floor)}


def _evidence(location: Path | str, count: int, questions: list[str]) -> dict[str, Any]:
    _, fill_rate = anyio.run(_fill, location, count, 2_000)
    search: list[float] = []
    build: list[float] = []
    with RawServer(location, "/bench/evidence") as server:  # type: ignore[arg-type]
        server.call_tool(
            "checkpoint_save", {"task_id": "bench", "state": {"goal": "Find what the questions ask about"}}
        )
        for q in questions[:10]:  # warm the caches
            server.call_tool("evidence_search", {"query": q})
            server.call_tool("build_working_set", {"task_id": "bench", "focus": q})
        for q in questions:
            _timed(server, "evidence_search", {"query": q}, search)
            _timed(server, "build_working_set", {"task_id": "bench", "focus": q}, build)
    return {"items": count, "fill_rate": round(fill_rate), "search": summary_ms(search), "build": summary_ms(build)}


def _recall(location: Path | str, folder: Path, quick: bool) -> dict[str, Any]:
    from bench.working_set import _retrieval

    return dict(anyio.run(_retrieval, folder, quick, location))


async def _tokens(location: Path | str) -> dict[str, str]:
    store = await open_store(location)
    try:
        return {user: (await create_token(store, user, [LOAD_PROJECT]))[0] for user in ("alice", "bob")}
    finally:
        await store.close()


async def _clients(urls: dict[str, str], tokens: dict[str, str], ops: int) -> dict[str, Any]:
    times: dict[str, list[float]] = defaultdict(list)
    acks: Counter[str] = Counter()
    errors: list[str] = []
    async with AsyncExitStack() as stack:
        clients = {}
        for name, (user, url) in {
            "a-1": ("alice", urls["a"]),
            "a-2": ("alice", urls["a"]),
            "b-1": ("bob", urls["b"]),
            "b-2": ("bob", urls["b"]),
        }.items():
            http = create_mcp_http_client(headers={"Authorization": f"Bearer {tokens[user]}"})
            clients[name] = await stack.enter_async_context(Client(streamable_http_client(url, http_client=http)))
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for name, client in clients.items():
                group.start_soon(_client, name, client, ops, times, acks, errors)
        wall = time.perf_counter() - started
    return {"times": times, "acks": acks, "errors": errors, "wall": wall}


async def _verify(location: Path | str, acks: Counter[str], names: list[str]) -> dict[str, int]:
    """Every acknowledged write is in the database, and each task's versions name the user who saved them."""
    store = await open_store(location)
    try:
        async with store.snapshot() as tx:
            for name in names:
                assert await tx.checkpoints.latest_version(LOAD_PROJECT, f"task-{name}") == acks[f"save:{name}"], name
                authors = {row.author for row in await tx.checkpoints.chain(LOAD_PROJECT, f"task-{name}")}
                assert authors <= {"alice" if name.startswith("a") else "bob"}, (name, authors)
            counts = await tx.stats.counts(LOAD_PROJECT)
            shared = await tx.checkpoints.latest_version(LOAD_PROJECT, "shared")
    finally:
        await store.close()
    assert counts["evidence records"] == acks["put"] and counts["memories (all versions)"] == acks["memory"]
    assert counts["side effects journaled"] - counts["side effects without a result"] == acks["journal"]
    assert shared <= acks["shared"]
    return {
        "evidence": counts["evidence records"],
        "memories": counts["memories (all versions)"],
        "results": acks["journal"],
        "shared versions": shared,
    }


def _load(location: Path | str, folder: Path, ops: int) -> dict[str, Any]:
    tokens = anyio.run(_tokens, location)
    env = {
        **os.environ,
        "CTXKEEP_DB": str(location),
        "CTXKEEP_PROJECT": LOAD_PROJECT,
        "XDG_DATA_HOME": str(folder / "xdg"),
    }
    env.pop("CTXKEEP_HTTP_TOKEN", None)
    ports = {"a": free_port(), "b": free_port()}
    servers = [
        subprocess.Popen(
            [sys.executable, "-m", "ctxkeep", "serve", "--http", "--port", str(port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for port in ports.values()
    ]
    try:
        for port in ports.values():
            wait_for_port(port)
        measured = anyio.run(_clients, {k: f"http://127.0.0.1:{p}/mcp" for k, p in ports.items()}, tokens, ops)
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=30)
    assert not measured["errors"], measured["errors"][:5]
    counted = anyio.run(_verify, location, measured["acks"], ["a-1", "a-2", "b-1", "b-2"])
    return {
        "times": {op: summary_ms(v) for op, v in sorted(measured["times"].items())},
        "counted": counted,
        "operations": sum(len(v) for v in measured["times"].values()),
        "wall_s": round(measured["wall"], 1),
    }


def measure(quick: bool) -> dict[str, Any]:
    results = _stores(quick)
    print("bench/teams.py: 1 and 3 servers under load ...", file=sys.stderr, flush=True)
    scaled = team_load.measure(quick)
    if scaled is not None:
        results["scale"] = scaled
    return results


def _stores(quick: bool) -> dict[str, Any]:
    count, loads, items, ops = (200, 200, 10_000, 100) if quick else (1_000, 1_000, 100_000, 500)
    questions = _questions(60 if quick else 200)
    results: dict[str, Any] = {}
    with _server() as server, tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        os.environ["XDG_DATA_HOME"] = str(folder / "xdg")  # the servers' spools and logs stay in the temp folder
        for kind in ("sqlite", "postgres") if server else ("sqlite",):
            got: dict[str, Any] = {}
            for part, work in (
                ("checkpoints", lambda db: _checkpoints(db, count, loads)),
                ("evidence", lambda db: _evidence(db, items, questions)),
                ("recall", lambda db: _recall(db, folder, quick)),
                ("load", lambda db: _load(db, folder, ops)),
            ):
                with _database(kind, server, folder) as db:
                    print(f"bench/teams.py: {kind} {part} ...", file=sys.stderr, flush=True)
                    got[part] = work(db)
            results[kind] = got
    return results


def _scale_rows(scale: dict[str, Any]) -> list[dict[str, str]]:
    """The 1-vs-3-server runs: throughput, the lock figure, where the CPU went, the checks."""
    rows = []
    for run in scale["runs"]:
        locks, cpu = run["locks"], run["cpu_s"]
        name = f"{run['mix']} mix, {run['servers']} server(s) × {run['clients']} clients"
        rows += [
            {
                "metric": f"{name}: calls/s",
                "value": f"{run['calls_per_s']} ({run['calls']} calls in {run['wall_s']} s)",
            },
            {
                "metric": f"{name}: lock figure (samples with a ctxkeep backend waiting for a lock)",
                "value": f"{locks['lock_wait_share']:.1%} of {locks['samples']} (by lock: {locks['by_lock'] or 'none'}; "
                f"holders: {locks['blockers_state'] or 'none'}; a writer idle in its transaction: "
                f"{locks['idle_writer_share']:.1%})",
                "target": "< 10%",
            },
            {
                "metric": f"{name}: CPU seconds",
                "value": f"servers {cpu['servers']}, PostgreSQL {cpu['postgres']}, load generator {cpu['load_generator']}; "
                f"the machine: {cpu['machine_busy']} busy, {cpu['machine_idle']} idle (all processes, all cores)",
            },
            {"metric": f"{name}: checked", "value": json.dumps(run["checked"], sort_keys=True)},
        ]
    rows.append(
        {
            "metric": "3 servers / 1 server, calls/s (per-task mix: clients on different tasks)",
            "value": f"{scale['scale_per_task']:.2f}× on {scale['cores']} cores",
            "target": "≥ 1.5×",
        }
    )
    rows.append(
        {"metric": "3 servers / 1 server, calls/s (per-project mix)", "value": f"{scale['scale_per_project']:.2f}×"}
    )
    return rows


def _rows(results: dict[str, Any]) -> list[dict[str, str]]:
    scale = results.pop("scale", None)

    def both(what: Any) -> str:
        return " | ".join(f"{kind}: {what(r)}" for kind, r in results.items())

    rows = [
        {
            "metric": "checkpoint_save p50 / floor p50 (stdio, 1 task, many versions)",
            "value": both(
                lambda r: f"{r['checkpoints']['save']['p50_ms']:.2f} / {r['checkpoints']['floor']['p50_ms']:.2f} ms"
            ),
        },
        {
            "metric": "checkpoint_load p50 (stdio)",
            "value": both(lambda r: f"{r['checkpoints']['load']['p50_ms']:.2f} ms"),
        },
        {
            "metric": "evidence_search p50 / p95 (stdio)",
            "value": both(
                lambda r: (
                    f"{r['evidence']['search']['p50_ms']:.1f} / {r['evidence']['search']['p95_ms']:.1f} ms at {r['evidence']['items']:,} items"
                )
            ),
        },
        {
            "metric": "build_working_set p50 / p95 (stdio)",
            "value": both(
                lambda r: f"{r['evidence']['build']['p50_ms']:.1f} / {r['evidence']['build']['p95_ms']:.1f} ms"
            ),
        },
        {
            "metric": "filling the project (Python API, batches of 500)",
            "value": both(lambda r: f"{r['evidence']['fill_rate']:,} items/s"),
        },
        {
            "metric": "LoCoMo recall in a 2,000-token evidence slot",
            "value": both(lambda r: f"{r['recall']['ctxkeep']:.3f} ({r['recall']['total']} q.)"),
            "target": "PostgreSQL within 0.02 of SQLite",
        },
        {
            "metric": "load: 2 serve --http × 4 clients (user tokens): errors, lost acknowledged writes",
            "value": both(lambda r: f"0 and 0 of {r['load']['operations']} ops in {r['load']['wall_s']} s"),
            "target": "0 and 0",
        },
    ]
    ops = sorted(next(iter(results.values()))["load"]["times"])
    rows += [
        {
            "metric": f"load: {op} p50 / p95",
            "value": both(
                lambda r, op=op: f"{r['load']['times'][op]['p50_ms']} / {r['load']['times'][op]['p95_ms']} ms"
            ),
        }
        for op in ops
    ]
    if scale is not None:
        rows += _scale_rows(scale)
        results["scale"] = scale
    return [{"baseline": "", "target": "", **row} for row in rows]


def run(quick: bool) -> dict[str, Any]:
    results = measure(quick)
    notes = ["the same data and the same questions on both stores, one after the other on the same machine"]
    if "scale" in results:
        notes.append(
            "1 and 3 servers: a PostgreSQL server of the bench's own, clients over raw streamable HTTP (bench/team_load.py); "
            f"load average before: {results['scale']['load_before']}"
        )
    else:
        notes.append("1 and 3 servers: no PostgreSQL binaries for a server of the bench's own, not measured")
    if "postgres" in results:
        gap = abs(results["postgres"]["recall"]["ctxkeep"] - results["sqlite"]["recall"]["ctxkeep"])
        assert gap <= 0.02, f"LoCoMo recall differs by {gap:.3f} between the stores"
        notes.append(
            f"LoCoMo recall: PostgreSQL - SQLite = {results['postgres']['recall']['ctxkeep'] - results['sqlite']['recall']['ctxkeep']:+.3f}"
        )
    else:
        notes.append(
            "no PostgreSQL server (set CTXKEEP_BENCH_POSTGRES_URL, or install the postgresql packages): SQLite only"
        )
    return {
        "title": "Teams: SQLite file and PostgreSQL side by side",
        "rows": _rows(results),
        "notes": notes,
        "raw": results,
    }


if __name__ == "__main__":
    print(json.dumps(run("--quick" in sys.argv), indent=2, sort_keys=True, default=str))
