"""Teams under load: 1 and 3 `serve --http` servers (user tokens) on one PostgreSQL server of the bench's own, with
clients over raw streamable HTTP (httpx, no MCP client: the load generator must cost little CPU on 2 cores).

Two mixes, each run on 1 server and on 3 (the clients spread round-robin), for a fixed time:
- per-task: every client works on a task of its own: saves (expected_version chained), loads, evidence puts and
  searches, working sets, journal intents and results, memories under its own keys.
- per-project: the clients share the project's objects besides a task of their own: saves of two shared tasks (no
  expected_version), a leased task every client tries to take with a 1 s lease (saves with an owner), evidence of a
  small shared pool of contents (the same record put at once by several), memories under a few shared keys, searches,
  working sets of the shared tasks.

Measured per run: calls/s; latency per operation; the lock figure (pg_stat_activity sampled every 20 ms: the share
of samples in which a ctxkeep backend waits for a lock, by lock type and by what the holders were doing, and the
share with a writer idle in its transaction); CPU seconds of the servers, of PostgreSQL (the postmaster and its children) and of this process.
Checked afterwards, as the two-server load checks: every acknowledged save, put, memory and journal result is in the
database once; the shared tasks have exactly the acknowledged versions; no two owners' saves of the leased task
overlap a live lease (a change of owner always records the takeover), and each takeover's delay after the expiry.
Run alone: python -m bench.team_load [--quick] (prints JSON).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx2 as httpx  # the HTTP client the MCP SDK ships (installed with it)

from bench.common import ROOT, free_port, summary_ms, wait_for_port

PROJECT = "/bench/team"
TICKS = os.sysconf("SC_CLK_TCK")
INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}


@contextmanager
def own_postgres(folder: Path) -> Any:
    """A throwaway PostgreSQL server (.ci/postgres): its URL and postmaster pid; None without the binaries."""
    pg = folder / "pg"
    started = subprocess.run(["bash", str(ROOT / ".ci" / "postgres"), "start", str(pg)], capture_output=True, text=True)
    if started.returncode != 0:
        yield None
        return
    try:
        postmaster = int((pg / "data" / "postmaster.pid").read_text().split()[0])
        yield started.stdout.strip(), postmaster
    finally:
        subprocess.run(["bash", str(ROOT / ".ci" / "postgres"), "stop", str(pg)], capture_output=True)


def machine_busy() -> tuple[float, float]:
    """CPU seconds the whole machine spent busy and idle so far (all cores, /proc/stat)."""
    fields = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields[:8]) - idle) / TICKS, idle / TICKS


def cpu_seconds(pid: int, with_children: bool = False) -> float:
    """A process's CPU seconds (user + system); with its children, the exited ones' too."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    ticks = int(fields[11]) + int(fields[12]) + ((int(fields[13]) + int(fields[14])) if with_children else 0)
    own = ticks / TICKS
    if not with_children:
        return own
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            child = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(child[1]) == pid:
            own += (int(child[11]) + int(child[12])) / TICKS
    return own


class Rpc:
    """One client session over raw streamable HTTP: initialize once, then tools/call."""

    def __init__(self, http: httpx.AsyncClient, url: str, token: str) -> None:
        self.http, self.url = http, url
        self.headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"}
        self.ids = itertools.count(1)

    async def start(self) -> None:
        answer = await self.http.post(self.url, json=INIT, headers=self.headers)
        answer.raise_for_status()
        self.headers |= {"Mcp-Session-Id": answer.headers["mcp-session-id"], "Mcp-Protocol-Version": "2025-06-18"}
        await self.http.post(
            self.url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=self.headers
        )

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        """(ok, structured result or {"text": the error})."""
        message = {"jsonrpc": "2.0", "id": next(self.ids), "method": "tools/call"}
        message["params"] = {"name": tool, "arguments": {**arguments, "format": "json"} if tool in _TEXT else arguments}
        answer = await self.http.post(self.url, json=message, headers=self.headers)
        if answer.status_code != 200:
            return False, {"text": f"HTTP {answer.status_code}: {answer.text[:200]}"}
        events = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
        reply = json.loads(events[-1] if events else answer.text)
        result = reply.get("result") or {}
        if "error" in reply or result.get("isError"):
            text = reply.get("error", {}).get("message") or " ".join(c.get("text", "") for c in result["content"])
            return False, {"text": text}
        return True, result.get("structuredContent") or {}


_TEXT = {"checkpoint_load", "evidence_search", "build_working_set"}  # text tools: ask for the structured result too


@dataclass
class Tally:
    times: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    acks: Counter[str] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)  # documented refusals (conflict, lease held)
    errors: list[str] = field(default_factory=list)
    puts: set[str] = field(default_factory=set)


def _state(goal: str, items: list[str]) -> dict[str, Any]:
    return {"goal": goal, "completed": items}


def _own_calls(op: str, name: str, i: int, version: int) -> list[tuple[str, dict[str, Any]]]:
    """The calls of one operation of the per-task mix (a journal entry is an intent, then its result)."""
    task, key = f"task-{name}", f"task-{name}:mail-{i}:send"
    state = _state(f"Work of {name}", [f"step {j}" for j in range(version + 1)])
    content = f"{name} output {i}: " + " ".join(f"line {n} of the build of module {name}-{i}" for n in range(40))
    calls: dict[str, list[tuple[str, dict[str, Any]]]] = {
        "save": [("checkpoint_save", {"task_id": task, "expected_version": version, "state": state})],
        "load": [("checkpoint_load", {"task_id": task})],
        "put": [("evidence_put", {"content": content, "task_id": task})],
        "search": [("evidence_search", {"query": f"build of module {name}", "limit": 5})],
        "working_set": [("build_working_set", {"task_id": task, "budget_tokens": 2000})],
        "journal": [
            ("action_intent", {"task_id": task, "idempotency_key": key, "action": "send", "target": f"mail {i}"}),
            ("action_result", {"idempotency_key": key, "status": "succeeded"}),
        ],
        "memory": [
            (
                "memory_write",
                {
                    "kind": "user_preference",
                    "key": f"{name} preference {i}",
                    "content": f"{name} likes {i}",
                    "explicit_confirmation": True,
                    "source_message_id": f"m-{i}",
                },
            )
        ],
    }
    return calls[op]


async def _own_task(rpc: Rpc, name: str, tally: Tally, until: float) -> None:
    """The per-task mix: one task of the client's own."""
    rng, version, i = random.Random(name), 0, 0
    ops = ["save", "save", "save", "load", "put", "put", "search", "working_set", "journal", "memory"]
    while time.perf_counter() < until:
        i += 1
        op = rng.choice(ops) if version else "save"
        started = time.perf_counter()
        ok, got = True, {}
        for tool, arguments in _own_calls(op, name, i, version):
            ok, got = await rpc.call(tool, arguments)
            if not ok:
                break
        tally.times[op].append(time.perf_counter() - started)
        if not ok:
            tally.errors.append(f"{name} {op}: {got['text'][:200]}")
            continue
        version = int(got["version"]) if op == "save" else version
        if op == "put":
            tally.puts.add(got["ref"])
        tally.acks[op] += 1
        tally.acks[f"{op}:{name}"] += 1


SHARED_CONTENTS = [
    f"shared finding {n}: " + " ".join(f"the quote of supplier {n} line {k}" for k in range(30)) for n in range(12)
]


def _shared_call(op: str, name: str, i: int, rng: random.Random) -> tuple[str, dict[str, Any], str]:
    """One operation of the per-project mix: its tool, arguments and the key its acknowledgement is counted under."""
    if op == "shared":
        task = rng.choice(["shared-a", "shared-b"])
        state = {"goal": "Shared work", "decisions": [f"{name} {i}"]}
        return "checkpoint_save", {"task_id": task, "strict": False, "state": state}, f"shared:{task}"
    if op == "own":
        state = {"goal": f"Own work of {name}", "decisions": [f"{name} {i}"]}
        return "checkpoint_save", {"task_id": f"own-{name}", "strict": False, "state": state}, f"own:{name}"
    if op == "lease":
        state = {"goal": "Leased work", "decisions": [f"{name} {i}"]}
        arguments = {"task_id": "leased", "owner": name, "lease_seconds": 1, "strict": False, "state": state}
        return "checkpoint_save", arguments, "lease"
    if op == "put":
        return "evidence_put", {"content": rng.choice(SHARED_CONTENTS)}, "put"
    if op == "search":
        return "evidence_search", {"query": "supplier quote", "limit": 5}, "search"
    if op == "working_set":
        task = rng.choice(["shared-a", "shared-b"])
        return "build_working_set", {"task_id": task, "budget_tokens": 2000}, "working_set"
    key = f"team preference {rng.randrange(3)}"
    arguments = {
        "kind": "user_preference",
        "key": key,
        "content": f"{name} wants {i}",
        "explicit_confirmation": True,
        "source_message_id": f"{name}-{i}",
    }
    return "memory_write", arguments, "memory"


async def _shared_project(rpc: Rpc, name: str, tally: Tally, until: float) -> None:
    """The per-project mix: the clients write the same objects (and each a task of its own)."""
    rng, i = random.Random(name), 0
    ops = ["own", "own", "shared", "lease", "put", "put", "search", "working_set", "memory"]
    while time.perf_counter() < until:
        i += 1
        op = rng.choice(ops)
        tool, arguments, counted = _shared_call(op, name, i, rng)
        started = time.perf_counter()
        ok, got = await rpc.call(tool, arguments)
        tally.times[op].append(time.perf_counter() - started)
        if ok:
            tally.acks[counted] += 1
            if op == "put":
                tally.puts.add(got["ref"])
        elif op == "lease" and "is leased to" in got["text"]:
            tally.refused["lease held"] += 1  # the documented refusal: another owner's lease is live
        else:
            tally.errors.append(f"{name} {op}: {got['text'][:200]}")


# one pass over pg_stat_activity and pg_locks (each read once), the blockers looked up for waiting backends only
_SAMPLE = (
    "WITH a AS (SELECT pid, state, wait_event_type, backend_xid, left(query, 60) AS query FROM pg_stat_activity "
    "WHERE application_name = 'ctxkeep' AND pid <> pg_backend_pid()), "
    "l AS (SELECT pid, locktype, granted FROM pg_locks WHERE pid IN (SELECT pid FROM a)) "
    "SELECT a.pid, a.state, a.query, a.wait_event_type = 'Lock' AS waits, a.backend_xid IS NOT NULL OR EXISTS "
    "(SELECT 1 FROM l WHERE l.pid = a.pid AND l.granted AND l.locktype = 'advisory') AS writes, "
    "(SELECT l.locktype FROM l WHERE l.pid = a.pid AND NOT l.granted LIMIT 1) AS wanted, "
    "CASE WHEN a.wait_event_type = 'Lock' THEN (SELECT string_agg(b.state, ',') FROM a b "
    "WHERE b.pid = ANY(pg_blocking_pids(a.pid))) END AS blocked_by FROM a"
)


async def _sample(url: str, stop: asyncio.Event) -> dict[str, Any]:
    """pg_stat_activity and pg_locks every 20 ms: how often a ctxkeep backend waits for a lock (which kind, and what
    the backends it waits for are doing: `idle in transaction` means waiting on their own server's Python), and how
    often a writer (a transaction holding a lock or a written row) sits idle in its transaction."""
    import asyncpg

    conn = await asyncpg.connect(url)
    samples, waiting, waiters, idle_writer = 0, 0, 0, 0
    kinds: Counter[str] = Counter()
    blockers: Counter[str] = Counter()
    statements: Counter[str] = Counter()
    try:
        while not stop.is_set():
            rows = await conn.fetch(_SAMPLE)
            samples += 1
            locked = [r for r in rows if r["waits"]]
            waiting += bool(locked)
            waiters += len(locked)
            kinds.update(str(r["wanted"]) for r in locked)
            statements.update(" ".join(str(r["query"]).split()) for r in locked)
            blockers.update(state for r in locked for state in str(r["blocked_by"] or "gone").split(","))
            idle_writer += any(r["state"] == "idle in transaction" and r["writes"] for r in rows)
            await asyncio.sleep(0.02)
    finally:
        await conn.close()
    return {
        "samples": samples,
        "lock_wait_share": round(waiting / max(1, samples), 4),
        "mean_waiters": round(waiters / max(1, samples), 3),
        "by_lock": dict(kinds),
        "blockers_state": dict(blockers),
        "waiting_statements": dict(statements.most_common(4)),
        "idle_writer_share": round(idle_writer / max(1, samples), 4),
    }


async def _drive(
    urls: list[str], tokens: list[str], clients: int, seconds: float, mix: str, pg_url: str
) -> tuple[Tally, dict[str, Any], float]:
    tally = Tally()
    stop = asyncio.Event()
    limits = httpx.Limits(max_connections=clients * 2)
    async with httpx.AsyncClient(timeout=120, limits=limits) as http:
        rpcs = [Rpc(http, urls[n % len(urls)], tokens[n % len(tokens)]) for n in range(clients)]
        for rpc in rpcs:
            await rpc.start()
        work = _own_task if mix == "per-task" else _shared_project
        if mix == "per-project":  # the shared tasks exist before anyone builds their working sets
            for task in ("shared-a", "shared-b"):
                ok, got = await rpcs[0].call("checkpoint_save", {"task_id": task, "state": {"goal": "Shared work"}})
                assert ok, got
                tally.acks[f"shared:{task}"] += 1
        sampler = asyncio.create_task(_sample(pg_url, stop))
        started = time.perf_counter()
        await asyncio.gather(*(work(rpc, f"c{n}", tally, started + seconds) for n, rpc in enumerate(rpcs)))
        wall = time.perf_counter() - started
        stop.set()
        locks = await sampler
    return tally, locks, wall


async def _verify(url: str, tally: Tally, mix: str, clients: int, run: str) -> dict[str, Any]:
    """The no-lost, no-doubled, no-double-winner checks over the database."""
    import asyncpg

    project = f"{PROJECT}/{run}"
    conn = await asyncpg.connect(url)
    try:
        records = await conn.fetchval("SELECT count(*) FROM evidence WHERE project = $1", project)
        refs = await conn.fetchval("SELECT count(DISTINCT ref) FROM evidence WHERE project = $1", project)
        assert records == refs == len(tally.puts), (records, refs, len(tally.puts))
        checked: dict[str, Any] = {"evidence": records}
        if mix == "per-task":
            for n in range(clients):
                latest = await conn.fetchval(
                    "SELECT latest_version FROM tasks WHERE project = $1 AND task_id = $2", project, f"task-c{n}"
                )
                assert (latest or 0) == tally.acks[f"save:c{n}"], (n, latest, tally.acks[f"save:c{n}"])
            results = await conn.fetchval(
                "SELECT count(*) FROM actions WHERE project = $1 AND status <> 'open'", project
            )
            memories = await conn.fetchval("SELECT count(*) FROM memories WHERE project = $1", project)
            assert results == tally.acks["journal"] and memories == tally.acks["memory"], (results, memories)
            checked |= {"saves": tally.acks["save"], "results": results, "memories": memories}
            return checked
        for n in range(clients):
            latest = await conn.fetchval(
                "SELECT latest_version FROM tasks WHERE project = $1 AND task_id = $2", project, f"own-c{n}"
            )
            assert (latest or 0) == tally.acks[f"own:c{n}"], (n, latest)
        for task in ("shared-a", "shared-b"):
            latest = await conn.fetchval(
                "SELECT latest_version FROM tasks WHERE project = $1 AND task_id = $2", project, task
            )
            assert (latest or 0) == tally.acks[f"shared:{task}"], (task, latest)
        chain = await conn.fetch(
            "SELECT version, owner, took_over, created_at FROM checkpoints WHERE project = $1 AND task_id = 'leased' ORDER BY version",
            project,
        )
        assert len(chain) == tally.acks["lease"], (len(chain), tally.acks["lease"])
        delays, takeovers = [], 0
        for before, after in zip(chain, chain[1:], strict=False):
            if after["owner"] != before["owner"]:
                assert after["took_over"] and str(before["owner"]) in after["took_over"], (
                    before,
                    after,
                )  # no double winner
                takeovers += 1
                expired = after["took_over"].split("lease expired ", 1)[1].rstrip(")")
                delays.append((_when(after["created_at"]) - _when(expired)).total_seconds() * 1000)
        memories = await conn.fetchval("SELECT count(*) FROM memories WHERE project = $1", project)
        assert memories == tally.acks["memory"], (memories, tally.acks["memory"])
        checked |= {
            "shared versions": tally.acks["shared:shared-a"] + tally.acks["shared:shared-b"],
            "leased versions": len(chain),
            "takeovers": takeovers,
            "takeover_ms_after_expiry_p50": round(statistics.median(delays), 1) if delays else None,
            "memories": memories,
        }
        return checked
    finally:
        await conn.close()


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def _run(
    url: str, postmaster: int, folder: Path, servers: int, mix: str, clients: int, seconds: float
) -> dict[str, Any]:
    run = f"{mix}-{servers}"
    env = {**os.environ, "CTXKEEP_DB": url, "XDG_DATA_HOME": str(folder / "xdg"), "CTXKEEP_LOG_LEVEL": "WARNING"}
    env.pop("CTXKEEP_HTTP_TOKEN", None)
    # a user per client: on a shared server a lease belongs to the token's user, so each client is its own owner
    tokens = [_token(env, f"c{n}", f"{PROJECT}/{run}") for n in range(clients)]
    ports = [free_port() for _ in range(servers)]
    with ExitStack() as stack:
        procs = []
        for port in ports:
            log = stack.enter_context(open(folder / f"serve-{run}-{port}.log", "w"))
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-m", "ctxkeep", "serve", "--http", "--port", str(port)],
                    env=env,
                    stdout=subprocess.DEVNULL,
                    stderr=log,
                )
            )
        try:
            for port in ports:
                wait_for_port(port)
            before = ([cpu_seconds(p.pid) for p in procs], cpu_seconds(postmaster, True), time.process_time())
            machine = machine_busy()
            urls = [f"http://127.0.0.1:{port}/mcp" for port in ports]
            tally, locks, wall = asyncio.run(_drive(urls, tokens, clients, seconds, mix, url))
            after = ([cpu_seconds(p.pid) for p in procs], cpu_seconds(postmaster, True), time.process_time())
            busy, idle = (a - b for a, b in zip(machine_busy(), machine, strict=True))
        finally:
            for proc in procs:
                proc.terminate()
                proc.wait(timeout=30)
    print(f"bench/team_load.py: {run}: {len(tally.errors)} error(s)", file=sys.stderr, flush=True)
    assert not tally.errors, tally.errors[:5]
    checked = asyncio.run(_verify(url, tally, mix, clients, run))
    calls = sum(len(v) for v in tally.times.values()) + tally.acks["journal"]  # a journal op is two calls
    return {
        "servers": servers,
        "mix": mix,
        "clients": clients,
        "calls": calls,
        "calls_per_s": round(calls / wall, 1),
        "wall_s": round(wall, 1),
        "times": {op: summary_ms(v) for op, v in sorted(tally.times.items())},
        "refused": dict(tally.refused),
        "locks": locks,
        "cpu_s": {
            "servers": round(sum(a - b for a, b in zip(after[0], before[0], strict=True)), 1),
            "postgres": round(after[1] - before[1], 1),
            "load_generator": round(after[2] - before[2], 1),
            "machine_busy": round(busy, 1),  # every process of the machine, ctxkeep's and others'
            "machine_idle": round(idle, 1),
        },
        "checked": checked,
    }


def _token(env: dict[str, str], user: str, project: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ctxkeep", "token", "create", "--user", user, "--project", project],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def measure(quick: bool) -> dict[str, Any] | None:
    """Both mixes on 1 and on 3 servers; None without the PostgreSQL binaries."""
    clients, seconds = (9, 6.0) if quick else (24, 45.0)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="ctxkeep-team-load-") as name:
        folder = Path(name)
        os.chmod(folder, 0o711)
        with own_postgres(folder) as started:
            if started is None:
                return None
            url, postmaster = started
            runs = [
                _run(url, postmaster, folder, servers, mix, clients, seconds)
                for mix in ("per-task", "per-project")
                for servers in (1, 3)
            ]
    by = {(r["mix"], r["servers"]): r for r in runs}
    return {
        "cores": os.cpu_count(),
        "load_before": [round(v, 1) for v in load_before],
        "load_after": [round(v, 1) for v in os.getloadavg()],
        "runs": runs,
        "scale_per_task": round(by["per-task", 3]["calls_per_s"] / by["per-task", 1]["calls_per_s"], 2),
        "scale_per_project": round(by["per-project", 3]["calls_per_s"] / by["per-project", 1]["calls_per_s"], 2),
    }


if __name__ == "__main__":
    print(json.dumps(measure("--quick" in sys.argv), indent=2, default=str))
