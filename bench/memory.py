"""Memory and journal: what long-term memory costs and what it finds, on LoCoMo's real observations.

Each LoCoMo conversation's turns are evidence (as in bench/working_set.py); each of its
observations ("Caroline attended an LGBTQ support group…", with the dia_id it was read from) is
written as a task_fact whose receipt is that turn. Every category 1-4 question then searches
memory (top 5) and, as the baseline in the same run, the raw turns with evidence_search (top 5):
a hit is a result whose turn (the memory's receipt, or the turn itself) is among the question's
evidence; tokens are those of the returned texts. Latency medians, each beside its nearest
baseline: memory_write vs evidence_put of the same text, memory_search vs evidence_search,
memory_forget (index merge, derived text, WAL checkpoint) vs evidence_delete, a working set with
the memories vs the same build before they were written, checkpoint_load with 20 open intents
vs without.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import anyio

from bench.common import SHARED_DATA, summary_ms
from bench.working_set import _turns
from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.evidence import EvidenceItem, EvidenceSearchRequest
from ctxkeep.models.journal import ActionIntentRequest
from ctxkeep.models.memory import MemoryForgetRequest, MemorySearchRequest, MemoryWriteRequest
from ctxkeep.models.working_set import WorkingSetRequest
from ctxkeep.storage import Store, open_store
from ctxkeep.tokens import count_tokens
from ctxkeep.tools.checkpoint.versions import checkpoint_load, checkpoint_save
from ctxkeep.tools.evidence.records import evidence_delete, evidence_put
from ctxkeep.tools.evidence.search import evidence_search
from ctxkeep.tools.journal.actions import action_intent
from ctxkeep.tools.memory.forget import memory_forget
from ctxkeep.tools.memory.records import memory_search, memory_write
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.working_set.assemble import build_working_set

T = TypeVar("T")
TOP = 5


async def _timed(times: list[float], work: Callable[[], Awaitable[T]]) -> T:
    started = time.perf_counter()
    result = await work()
    times.append(time.perf_counter() - started)
    return result


def _observations(sample: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(speaker, text, dia_id) of every observation with a well-formed receipt."""
    found = []
    for session in sorted(sample["observation"], key=lambda name: int(name.split("_")[1])):
        for speaker, facts in sorted(sample["observation"][session].items()):
            for fact in facts:
                dia = fact[1] if isinstance(fact[1], str) else ""
                if dia.startswith("D") and ":" in dia:
                    found.append((speaker, fact[0], dia))
    return found


async def _conversation(
    store: Store, sample: dict[str, Any], times: dict[str, list[float]], counts: dict[str, int], quick: bool
) -> None:
    scope = Scope(store, f"/bench/memory/{sample['sample_id']}")
    turns = _turns(sample)
    refs = (await evidence_put(scope, turns)).refs
    ref_of = {item.title: ref for item, ref in zip(turns, refs, strict=True)}
    dia_of = {ref: dia for dia, ref in ref_of.items()}
    text_of = {ref: item.content for item, ref in zip(turns, refs, strict=True)}
    await checkpoint_save(
        scope,
        CheckpointSaveRequest(
            task_id="chat", state=TaskState(goal=f"Answer questions about conversation {sample['sample_id']}")
        ),
    )
    questions = [
        (q["question"], q["evidence"]) for q in sample["qa"] if q.get("category") in (1, 2, 3, 4) and q.get("evidence")
    ]
    questions = questions[:40] if quick else questions
    for question, _ in questions[:20]:
        await _timed(
            times["working_set_without"],
            lambda: build_working_set(scope, WorkingSetRequest(task_id="chat", focus=question)),
        )
    memory_of: dict[str, str] = {}
    for i, (speaker, text, dia) in enumerate(_observations(sample)[: 200 if quick else None]):
        if dia not in ref_of:
            continue
        request = MemoryWriteRequest(kind="task_fact", key=f"{speaker} #{i}", content=text, evidence_ref=ref_of[dia])
        written = await _timed(times["memory_write"], lambda: memory_write(scope, request))
        memory_of[written.memory.memory_id] = dia
        await _timed(
            times["evidence_put"],
            lambda: evidence_put(scope, [EvidenceItem(content=text, kind="note", source="baseline")]),
        )
    for question, evidence in questions:
        found = await _timed(
            times["memory_search"], lambda: memory_search(scope, MemorySearchRequest(query=question, limit=TOP))
        )
        hits = await _timed(
            times["evidence_search"],
            lambda: evidence_search(scope, EvidenceSearchRequest(query=question, kind="message", limit=TOP)),
        )
        counts["questions"] += 1
        counts["memory_hits"] += any(memory_of.get(m.memory_id) in evidence for m in found.memories)
        counts["turn_hits"] += any(dia_of.get(h.ref) in evidence for h in hits.hits)
        counts["memory_tokens"] += sum(count_tokens(m.content) for m in found.memories)
        counts["turn_tokens"] += sum(count_tokens(text_of[h.ref]) for h in hits.hits)
    for question, _ in questions[:20]:
        await _timed(
            times["working_set_with"],
            lambda: build_working_set(scope, WorkingSetRequest(task_id="chat", focus=question)),
        )
    await _journal_and_forget(scope, list(memory_of)[:25], refs[:25], times)


async def _journal_and_forget(
    scope: Scope, memory_ids: list[str], refs: list[str], times: dict[str, list[float]]
) -> None:
    for _ in range(10):
        await _timed(times["load_without"], lambda: checkpoint_load(scope, "chat"))
    for i in range(20):
        await action_intent(
            scope,
            ActionIntentRequest(
                task_id="chat", idempotency_key=f"chat:message-{i}:send", action="send message", target=f"thread {i}"
            ),
        )
    for _ in range(10):
        await _timed(times["load_with"], lambda: checkpoint_load(scope, "chat"))
    for memory_id in memory_ids:
        await _timed(times["memory_forget"], lambda: memory_forget(scope, MemoryForgetRequest(memory_id=memory_id)))
    for ref in refs:
        await _timed(times["evidence_delete"], lambda: evidence_delete(scope, ref))


async def _measure(folder: Path, quick: bool) -> dict[str, Any]:
    data = json.loads((SHARED_DATA / "locomo" / "locomo10_dev.json").read_text())
    names = [
        "memory_write",
        "evidence_put",
        "memory_search",
        "evidence_search",
        "memory_forget",
        "evidence_delete",
        "working_set_with",
        "working_set_without",
        "load_with",
        "load_without",
    ]
    times: dict[str, list[float]] = {name: [] for name in names}
    counts = dict.fromkeys(["questions", "memory_hits", "turn_hits", "memory_tokens", "turn_tokens"], 0)
    store = await open_store(folder / "memory.db")
    try:
        for sample in data[:2] if quick else data:
            await _conversation(store, sample, times, counts, quick)
    finally:
        await store.close()
    return {"times": {name: summary_ms(values) for name, values in times.items()}, "counts": counts}


def _ratio(times: dict[str, dict[str, float]], ours: str, theirs: str) -> str:
    return f"{times[ours]['p50_ms'] / times[theirs]['p50_ms']:.2f}x"


def run(quick: bool) -> dict[str, Any]:
    if not (SHARED_DATA / "locomo" / "locomo10_dev.json").exists():
        return {"title": "Memory and journal", "rows": [], "notes": ["skipped: ../shared/data/locomo is absent"]}
    with tempfile.TemporaryDirectory() as tmp:
        measured = anyio.run(_measure, Path(tmp), quick)
    times, counts = measured["times"], measured["counts"]
    n = counts["questions"]

    def ms(name: str) -> str:
        return f"p50 {times[name]['p50_ms']} / p95 {times[name]['p95_ms']} ms"

    pairs = [
        ("memory_write", "evidence_put"),
        ("memory_search", "evidence_search"),
        ("memory_forget", "evidence_delete"),
        ("working_set_with", "working_set_without"),
        ("load_with", "load_without"),
    ]
    labels = {
        "memory_write": "memory_write (gate, receipt check, conflict)",
        "memory_search": "memory_search, top 5",
        "memory_forget": "memory_forget (index merge, digests, WAL checkpoint)",
        "working_set_with": "build_working_set, 8,000 tokens, with the memories",
        "load_with": "checkpoint_load with 20 open intents",
    }
    rows = [
        {
            "metric": f"LoCoMo questions with a receipt turn in the top {TOP} ({n} questions)",
            "value": f"{counts['memory_hits'] / n:.3f} memories ({counts['memory_tokens'] / n:.0f} tokens/question)",
            "baseline": f"{counts['turn_hits'] / n:.3f} raw turns via evidence_search ({counts['turn_tokens'] / n:.0f} tokens/question)",
        }
    ]
    rows += [
        {
            "metric": labels[ours],
            "value": ms(ours),
            "baseline": f"{ms(theirs)} ({theirs.replace('_', ' ')}); ratio {_ratio(times, ours, theirs)}",
        }
        for ours, theirs in pairs
    ]
    return {
        "title": "Memory and journal",
        "rows": rows,
        "notes": [
            "LoCoMo observations written as task_fact memories whose receipt is the turn they were read from; "
            "every category 1-4 question searches them and, as the baseline, the raw turns.",
            "Latencies in-process on one SQLite file; each baseline is the nearest existing operation on the same data.",
        ],
        "raw": measured,
    }
