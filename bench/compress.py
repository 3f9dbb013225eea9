"""History compression on the shared runs: span and whole-history reduction, fidelity, what the digest names.

Over every SWE-bench agent run and both long Claude Code transcripts, with the defaults
(keep_recent 8, shape_window 4, digest_tokens 1,000). Baseline in the same run: dropping the
same span outright (the reduction a truncating compactor gets, with nothing retrievable).
Edited files and error types are derived from the raw history independently of the digest code.
"""

from __future__ import annotations

import json
import re
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio

from bench.common import SHARED_DATA
from ctxkeep.models.compress import CompressRequest, CompressResult
from ctxkeep.models.evidence import EvidenceGetRequest
from ctxkeep.storage import open_store
from ctxkeep.tools.compression.compress import compress_history
from ctxkeep.tools.compression.transcript import read_transcript
from ctxkeep.tools.evidence.get import evidence_get
from ctxkeep.tools.shared.messages import parse
from ctxkeep.tools.redaction.redact import redact_secrets
from ctxkeep.tools.scope import Scope

TRANSCRIPTS = ["258c7280-ae70-4798-800f-63464d01a85d.jsonl", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"]
_ERROR_TYPE = re.compile(r"\b([A-Z][A-Za-z]*(?:Error|Exception))\b")
_PRINTED = re.compile(r"^\s*([A-Z][A-Za-z]*(?:Error|Exception)): ", re.MULTILINE)


def _errors_seen(output: str) -> set[str]:
    """Error types an output shows as errors: all of them when it failed, printed exceptions when it did not."""
    failed = (
        re.search(r"<returncode>\s*-?[1-9]", output)
        or output.startswith("[is_error]")
        or "Traceback (most recent call last)" in output
    )
    return set(_ERROR_TYPE.findall(output) if failed else _PRINTED.findall(output))


def _edited(messages: list[dict[str, Any]], fmt: str) -> set[str]:
    paths: set[str] = set()
    if fmt == "generic":
        for message, answer in zip(messages, messages[1:], strict=False):
            if message["role"] == "assistant" and "<returncode>" in str(answer["content"]):
                for command in re.findall(r"```bash\n(.*?)```", message["content"], re.DOTALL):
                    paths.update(re.findall(r"\bsed -i(?:\s+-\S+)*\s+(?:'[^']*'|\"[^\"]*\")\s+(\S+)", command))
                    paths.update(re.findall(r"(?:cat|echo)\b[^\n>]*>\s*([\w./-]+)", command))
    else:
        for message in messages:
            for block in message["content"] if isinstance(message["content"], list) else []:
                if block.get("type") == "tool_use" and block.get("name") in ("Edit", "Write", "MultiEdit"):
                    paths.add(str(block.get("input", {}).get("file_path")))
    return {p for p in paths if not p.startswith("/dev/")}


def _tool_outputs(messages: list[dict[str, Any]], fmt: str) -> list[str]:
    """The tool outputs of a history, found without the parser: user messages with a return code, tool_result blocks."""
    if fmt == "generic":
        return [m["content"] for m in messages[1:] if m["role"] == "user" and "<returncode>" in m["content"]]
    return [
        ("[is_error] " if b.get("is_error") else "") + json.dumps(b.get("content"), ensure_ascii=False)
        for m in messages
        if isinstance(m["content"], list)
        for b in m["content"]
        if b.get("type") == "tool_result"
    ]


async def _fidelity(scope: Scope, raw: list[dict[str, Any]], result: CompressResult, fmt: str) -> tuple[int, int]:
    parsed = parse(raw, fmt)  # type: ignore[arg-type]
    first = (result.bands["digest"] or result.bands["shaped"] or [0])[0]
    last = (result.bands["shaped"] or result.bands["digest"] or [-1])[-1]
    # each stored item must be one of the outputs, byte for byte (edit confirmations and answers to a missing tool
    # are not stored, so there may be fewer items than outputs)
    texts = {redact_secrets(o.text)[0] for m in parsed[first : last + 1] for o in m.outputs}
    exact = 0
    for ref in result.evidence_refs:
        parts, chunk = [], 0
        while True:
            part = await evidence_get(scope, EvidenceGetRequest(ref=ref, mode="chunk", chunk=chunk, max_tokens=25_000))
            parts.append(part.content)
            if part.next is None:
                break
            chunk += 1
        exact += "".join(parts) in texts
    return exact, len(result.evidence_refs)


async def _one(scope: Scope, raw: list[dict[str, Any]], request: CompressRequest, fmt: str) -> dict[str, Any]:
    started = time.perf_counter()
    result = await compress_history(scope, request, env={"CTXKEEP_ALLOWED_ROOTS": str(SHARED_DATA)})
    seconds = time.perf_counter() - started
    band = raw[result.bands["digest"][0] : result.bands["digest"][1] + 1] if result.bands["digest"] else []
    edited = _edited(band, fmt)
    errors = {e for text in _tool_outputs(band, fmt) for e in _errors_seen(text)}
    exact, total = await _fidelity(scope, raw, result, fmt)
    return {
        "span": 1 - result.span_tokens_after / max(1, result.span_tokens_before),
        "whole": 1 - result.tokens_after / result.tokens_before,
        "span_before": result.span_tokens_before,
        "seconds": seconds,
        "exact": exact,
        "offloaded": total,
        "files": (sum(p in result.digest for p in edited), len(edited)),
        "errors": (sum(e in result.digest for e in errors), len(errors)),
        "dropped_span_whole": 1 - (result.tokens_before - result.span_tokens_before) / result.tokens_before,
    }


async def _measure() -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {"swe": [], "claude_code": []}
    with tempfile.TemporaryDirectory() as tmp:
        store = await open_store(Path(tmp) / "c.db")
        scope = Scope(store=store, project=tmp)
        try:
            for path in sorted((SHARED_DATA / "swe-trajectories").glob("*.traj.json")):
                raw = json.loads(path.read_text())["messages"]
                out["swe"].append(await _one(scope, raw, CompressRequest(messages=raw, task_id=path.stem), "generic"))
            for name in TRANSCRIPTS:
                path = SHARED_DATA / "claude-code-transcripts" / name
                request = CompressRequest(transcript_path=str(path), task_id=name[:8])
                out["claude_code"].append(await _one(scope, read_transcript(path).messages, request, "claude_code"))
        finally:
            await store.close()
    return out


def _ratio(pairs: list[tuple[int, int]]) -> str:
    hit, total = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    return f"{hit}/{total}"


def run(quick: bool) -> dict[str, Any]:
    m = anyio.run(_measure)
    swe, cc = m["swe"], m["claude_code"]
    median = statistics.median
    all_runs = swe + cc
    return {
        "title": f"History compression ({len(swe)} SWE-bench runs, {len(cc)} long Claude Code transcripts; defaults)",
        "rows": [
            {
                "metric": "SWE runs: span tokens saved, median (min)",
                "value": f"{median(r['span'] for r in swe):.1%} ({min(r['span'] for r in swe):.1%})",
                "baseline": "100% by dropping the span (nothing retrievable)",
                "target": "≥ 85%",
            },
            {
                "metric": "SWE runs: whole history saved, median",
                "value": f"{median(r['whole'] for r in swe):.1%}",
                "baseline": f"{median(r['dropped_span_whole'] for r in swe):.1%} by dropping the span",
                "target": "",
            },
            {
                "metric": "Claude Code transcripts: span tokens saved, median",
                "value": f"{median(r['span'] for r in cc):.1%}",
                "baseline": "",
                "target": "≥ 95%",
            },
            {
                "metric": "Claude Code transcripts: whole history saved, median",
                "value": f"{median(r['whole'] for r in cc):.1%}",
                "baseline": "",
                "target": "",
            },
            {
                "metric": "offloaded outputs returned byte-identical",
                "value": f"{sum(r['exact'] for r in all_runs)}/{sum(r['offloaded'] for r in all_runs)}",
                "baseline": "",
                "target": "100%",
            },
            {
                "metric": "files edited in the digest band named in the digest",
                "value": _ratio([r["files"] for r in all_runs]),
                "baseline": "",
                "target": "all",
            },
            {
                "metric": "distinct error types in the digest band's tool outputs named in the digest",
                "value": _ratio([r["errors"] for r in all_runs]),
                "baseline": "",
                "target": "all",
            },
            {
                "metric": "compressing a ~3 MB transcript, median",
                "value": f"{median(r['seconds'] for r in cc):.2f} s",
                "baseline": "",
                "target": "≤ 1 s",
            },
        ],
        "notes": [f"SWE span sizes: median {median(r['span_before'] for r in swe):,.0f} tokens"],
        "raw": m,
    }
