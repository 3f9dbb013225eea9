"""Evidence store: put throughput, search and get latency at 100,000 items, database size.

All items are real text (bench/fixture.py). Put, search and get are measured over stdio with
the raw JSON-RPC client. Baselines in the same run: plain sqlite3 writing the same items into
a blob table plus an FTS5 porter index (no validation, redaction, previews, tokens or stdio),
and the same FTS5 index answering the same questions in-process, twice: as an OR of every word,
and as an OR of the words left once stopwords are removed (ctxkeep's own list, which its search
leaves out too). The floor of the stdio calls is the cheapest tool call, checkpoint_list(limit=1),
measured between the searches.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import tempfile
import time
import zlib
from pathlib import Path
from typing import Any

import anyio

from bench.common import SHARED_DATA, summary_ms
from bench.fixture import items
from bench.rpc import RawServer
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.storage import open_store
from ctxkeep.storage.index_terms import STOPWORDS
from ctxkeep.tools.evidence.records import evidence_put
from ctxkeep.tools.scope import Scope

PROJECT = "/bench/evidence"


def _put_rate(server: RawServer, texts: list[str], batch: int) -> float:
    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        part = [{"content": t, "source": "Bash", "kind": "tool_result"} for t in texts[i : i + batch]]
        server.call_tool("evidence_put", {"items": part} if batch > 1 else part[0])
    return len(texts) / (time.perf_counter() - started)


def _baseline_db(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE blobs (id INTEGER PRIMARY KEY, sha TEXT UNIQUE, data BLOB)")
    conn.execute("CREATE VIRTUAL TABLE docs USING fts5 (body, tokenize = 'porter unicode61')")
    return conn


def _baseline_put_rate(conn: sqlite3.Connection, texts: list[str], batch: int) -> float:
    import hashlib

    started = time.perf_counter()
    for i in range(0, len(texts), batch):
        conn.execute("BEGIN")
        for text in texts[i : i + batch]:
            raw = text.encode()
            conn.execute(
                "INSERT OR IGNORE INTO blobs (sha, data) VALUES (?, ?)",
                (hashlib.sha256(raw).hexdigest(), zlib.compress(raw)),
            )
            conn.execute("INSERT INTO docs (body) VALUES (?)", (text,))
        conn.execute("COMMIT")
    return len(texts) / (time.perf_counter() - started)


def _questions(limit: int) -> list[str]:
    data = json.loads((SHARED_DATA / "locomo" / "locomo10_dev.json").read_text())
    return [qa["question"] for sample in data for qa in sample["qa"] if qa.get("category") in (1, 2, 3, 4)][:limit]


def _baseline_query(question: str, stopwords: frozenset[str] = frozenset()) -> str:
    """The question as an FTS5 OR of its words (each quoted), leaving out `stopwords`."""
    return " OR ".join(f'"{w}"' for w in re.findall(r"\w+", question.lower()) if w not in stopwords) or '""'


BASELINE_SEARCH = "SELECT rowid, snippet(docs, 0, '', '', '…', 20) FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT 10"


def _baseline_seconds(conn: sqlite3.Connection, query: str) -> float:
    started = time.perf_counter()
    conn.execute(BASELINE_SEARCH, (query,)).fetchall()
    return time.perf_counter() - started


async def _fill(db: Path, count: int, size: int) -> tuple[list[str], float]:
    """The 100,000-item project, written through the Python API in batches of 500 (setup, also timed)."""
    store = await open_store(db)
    scope = Scope(store=store, project=PROJECT)
    refs: list[str] = []
    started = time.perf_counter()
    try:
        for i in range(0, count, 500):
            batch = [
                EvidenceItem(content=t, source="Bash", tags=["bench"])
                for t in items(min(500, count - i), size, seed=1000 + i)
            ]
            refs += (await evidence_put(scope, batch)).refs
    finally:
        await store.close()
    return refs, count / (time.perf_counter() - started)


def _timed_calls(server: RawServer, calls: list[tuple[str, dict[str, Any]]]) -> list[float]:
    times = []
    for tool, arguments in calls:
        started = time.perf_counter()
        server.call_tool(tool, arguments)
        times.append(time.perf_counter() - started)
    return times


def _throughput(tmp: Path, quick: bool) -> dict[str, float]:
    small, large = items(1_000 if quick else 3_000, 2_000, seed=1), items(64 if quick else 160, 64_000, seed=2)
    singles = 200 if quick else 500
    rates: dict[str, float] = {}
    with RawServer(tmp / "put.db", PROJECT) as server:
        rates["2KB batched (200)"] = _put_rate(server, small, 200)
        rates["2KB single"] = _put_rate(server, items(singles, 2_000, seed=3), 1)
        rates["64KB batched (16)"] = _put_rate(server, large, 16)
        rates["64KB single"] = _put_rate(server, items(40, 64_000, seed=4), 1)
    conn = _baseline_db(tmp / "baseline-put.db")
    rates["baseline 2KB batched (200)"] = _baseline_put_rate(conn, small, 200)
    rates["baseline 64KB batched (16)"] = _baseline_put_rate(conn, large, 16)
    conn.close()
    return rates


def run(quick: bool) -> dict[str, Any]:
    count = 10_000 if quick else 100_000
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        rates = _throughput(tmp, quick)
        refs, fill_rate = anyio.run(_fill, tmp / "big.db", count, 2_000)
        baseline = _baseline_db(tmp / "baseline.db")
        _baseline_put_rate(
            baseline, [t for i in range(0, count, 500) for t in items(min(500, count - i), 2_000, seed=1000 + i)], 500
        )
        questions = _questions(100 if quick else 300)
        rng = random.Random(5)
        with RawServer(tmp / "big.db", PROJECT) as server:
            _timed_calls(server, [("evidence_search", {"query": q}) for q in questions[:10]])  # warm the caches
            search, floor, base_search, base_lean = [], [], [], []
            for q in questions:  # interleaved, so drift on a shared machine hits all four alike
                search += _timed_calls(server, [("evidence_search", {"query": q})])
                floor += _timed_calls(server, [("checkpoint_list", {"limit": 1})])
                base_search.append(_baseline_seconds(baseline, _baseline_query(q)))
                base_lean.append(_baseline_seconds(baseline, _baseline_query(q, STOPWORDS)))
            gets = _timed_calls(
                server,
                [
                    ("evidence_get", {"ref": rng.choice(refs), **mode})
                    for mode in [
                        {"mode": "full"},
                        {"mode": "lines", "start": 3, "end": 12},
                        {"mode": "grep", "pattern": "the"},
                    ]
                    * 100
                ],
            )
        baseline.close()
        size = sum(p.stat().st_size for p in tmp.glob("big.db*")) / count * 100_000 / 2**20
        base_size = sum(p.stat().st_size for p in tmp.glob("baseline.db*")) / count * 100_000 / 2**20
    s, b, lean, f = summary_ms(search), summary_ms(base_search), summary_ms(base_lean), summary_ms(floor)
    g = summary_ms(gets)
    return {
        "title": f"Evidence store with {count:,} real-text items of 2 KB",
        "rows": [
            {
                "metric": "evidence_put 2 KB items, batches of 200 (stdio)",
                "value": f"{rates['2KB batched (200)']:,.0f} items/s",
                "baseline": f"{rates['baseline 2KB batched (200)']:,.0f} items/s (raw sqlite3 + FTS5)",
                "target": "≥ 500 items/s",
            },
            {
                "metric": "evidence_put 2 KB items, one per call (stdio)",
                "value": f"{rates['2KB single']:,.0f} items/s",
                "baseline": "",
                "target": "",
            },
            {
                "metric": "evidence_put 64 KB items, batches of 16 (stdio)",
                "value": f"{rates['64KB batched (16)']:,.0f} items/s",
                "baseline": f"{rates['baseline 64KB batched (16)']:,.0f} items/s (raw sqlite3 + FTS5)",
                "target": "",
            },
            {
                "metric": "evidence_put 64 KB items, one per call (stdio)",
                "value": f"{rates['64KB single']:,.0f} items/s",
                "baseline": "",
                "target": "",
            },
            {
                "metric": f"evidence_search p50 / p95, {len(questions)} LoCoMo questions (stdio)",
                "value": f"{s['p50_ms']:.1f} / {s['p95_ms']:.1f} ms",
                "baseline": f"{b['p50_ms']:.1f} / {b['p95_ms']:.1f} ms (raw FTS5 porter, in-process, every word OR'ed)",
                "target": "p50 ≤ 40 ms",
            },
            {
                "metric": "evidence_search p50 / raw FTS5 p50: every word OR'ed; stopwords left out",
                "value": f"{s['p50_ms'] / b['p50_ms']:.2f}×; {s['p50_ms'] / lean['p50_ms']:.2f}×",
                "baseline": f"stopwords left out: {lean['p50_ms']:.1f} / {lean['p95_ms']:.1f} ms (in-process)",
                "target": "",
            },
            {
                "metric": "evidence_search p50 less the stdio floor (checkpoint_list limit=1, same server, interleaved)",
                "value": f"{s['p50_ms'] - f['p50_ms']:.1f} ms",
                "baseline": f"floor {f['p50_ms']:.2f} ms",
                "target": "",
            },
            {
                "metric": "evidence_get p50 / p95 (full, lines, grep; stdio)",
                "value": f"{g['p50_ms']:.1f} / {g['p95_ms']:.1f} ms",
                "baseline": "",
                "target": "",
            },
            {
                "metric": "database size per 100,000 items",
                "value": f"{size:,.0f} MiB",
                "baseline": f"{base_size:,.0f} MiB (raw sqlite3 + FTS5)",
                "target": "",
            },
            {
                "metric": "filling the project through the Python API (batches of 500)",
                "value": f"{fill_rate:,.0f} items/s",
                "baseline": "",
                "target": "",
            },
        ],
        "notes": [
            "items are windows of the real corpus (LoCoMo turns, SWE-bench agent runs, Claude Code tool results)",
            "ctxkeep also redacts secrets, writes a preview, counts tokens and stores 12-hex hashed terms per word",
        ],
        "raw": {
            "rates": rates,
            "search": s,
            "baseline_search": b,
            "baseline_search_without_stopwords": lean,
            "floor": f,
            "get": g,
            "fill_rate": fill_rate,
        },
    }
