"""evidence_get: exactly the part of a stored item that is needed, within a token budget.

Modes: full, head/tail (`n` lines), lines (`start`–`end`, 1-based, inclusive), grep
(`pattern` with `context` lines, optionally within `start`–`end`), chunk (0-based; chunks are
cut at character boundaries and concatenate to the exact content). Whatever does not fit is
reported with `truncated` and `next`, the arguments of the call that returns the rest.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import anyio
import regex

from ctxkeep.errors import InvalidInput, NotFound
from ctxkeep.models.evidence import MAX_READ_TOKENS, EvidenceContent, EvidenceGetRequest
from ctxkeep.storage import EvidenceRow
from ctxkeep.tokens import count_tokens
from ctxkeep.tools.evidence.inbox import take_offloads
from ctxkeep.tools.evidence.records import CONTENTS, load_row
from ctxkeep.tools.scope import Scope


def split_lines(text: str) -> list[str]:
    """Lines with their line endings kept, so joining them gives `text` back exactly."""
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    return lines + [parts[-1]] if parts[-1] else lines


def _fit(lines: list[str], max_tokens: int) -> int:
    """How many of `lines`, from the first, fit in `max_tokens` (at least the first line's part is never split here)."""
    used = 0
    for index, line in enumerate(lines):
        used += count_tokens(line)
        if used > max_tokens:
            return index
    return len(lines)


def _prefix_within(text: str, max_tokens: int) -> str:
    """The longest prefix of one long line that fits the budget, cut at a character boundary."""
    cut = min(len(text), max_tokens * 4)
    while cut > 0 and count_tokens(text[:cut]) > max_tokens:
        cut = int(cut * 0.9)
    return text[:cut]


@dataclass(frozen=True)
class Part:
    content: str
    next: dict[str, Any] | None = None  # the call that returns what comes after
    truncated: bool = False  # the budget cut what the mode asked for


GREP_SECONDS = 2.0


def chunk_call(req: EvidenceGetRequest, text: str, size: int, index: int) -> dict[str, Any]:
    """The evidence_get arguments that read chunk `index`, with a budget large enough for it."""
    tokens = count_tokens(text[index * size : (index + 1) * size])
    return {
        "ref": req.ref,
        "mode": "chunk",
        "chunk": index,
        "max_tokens": max(req.max_tokens, min(tokens, MAX_READ_TOKENS)),
    }


def _line_window(req: EvidenceGetRequest, text: str, size: int, lines: list[str], first: int, last: int) -> Part:
    """Lines first..last (0-based, exclusive end), trimmed to the budget."""
    window = lines[first:last]
    fits = _fit(window, req.max_tokens)
    if fits == len(window):
        return Part("".join(window))
    if fits == 0:  # one line longer than the budget: its start, then the chunks from the one holding its start
        offset = sum(len(line) for line in lines[:first])
        prefix = _prefix_within(window[0], req.max_tokens)
        return Part(prefix, chunk_call(req, text, size, (offset + len(prefix)) // size), True)
    return Part("".join(window[:fits]), {"ref": req.ref, "mode": "lines", "start": first + fits + 1, "end": last}, True)


def _compile(pattern: str) -> Any:
    try:
        return regex.compile(pattern)
    except (regex.error, OverflowError, ValueError, RecursionError) as exc:
        raise InvalidInput(
            f"pattern is not a valid regular expression ({exc}); escape metacharacters such as ( [ . * "
            "with a backslash, or search for a plain word"
        ) from None


def _matches(pattern: Any, line: str, deadline: float) -> bool:
    try:
        return pattern.search(line, timeout=max(0.001, deadline - time.monotonic())) is not None
    except TimeoutError:
        raise InvalidInput(
            f"the pattern took over {GREP_SECONDS:g} s; use a simpler pattern (no nested repetition) "
            "or narrow the search with start and end"
        ) from None


def _grep(req: EvidenceGetRequest, lines: list[str]) -> Part:
    """Matching lines as `N:text`, context as `N-text`, groups separated by `--` (like grep -n)."""
    pattern = _compile(req.pattern or "")
    deadline = time.monotonic() + GREP_SECONDS
    first, last = (req.start or 1) - 1, min(req.end or len(lines), len(lines))
    out: list[str] = []
    used, shown_until = 0, first - 1
    for hit in (i for i in range(first, last) if _matches(pattern, lines[i], deadline)):
        if hit <= shown_until:
            continue
        block = range(max(hit - req.context, shown_until + 1), min(hit + req.context + 1, last))
        separator = "--\n" if out and block[0] > shown_until + 1 else ""
        text = separator + "".join(
            f"{i + 1}{':' if _matches(pattern, lines[i], deadline) else '-'}{lines[i]}" for i in block
        )
        cost = count_tokens(text)
        rest = {
            "ref": req.ref,
            "mode": "grep",
            "pattern": req.pattern,
            "context": req.context,
            "start": block[0] + 1,
            **({"end": req.end} if req.end else {}),
        }
        if out and used + cost > req.max_tokens:
            return Part("".join(out), rest, True)
        if cost > req.max_tokens:  # a single block over the budget: its start, and grep on from its next line
            return Part(_prefix_within(text, req.max_tokens), {**rest, "start": block[0] + 2}, True)
        out.append(text)
        used += cost
        shown_until = block[-1]
    return Part("".join(out))


def _chunk(req: EvidenceGetRequest, text: str, size: int, total: int) -> Part:
    index = req.chunk or 0
    if index >= total:
        raise InvalidInput(f"chunk {index} does not exist; this item has {total} chunk(s), numbered 0 to {total - 1}")
    part = text[index * size : (index + 1) * size]
    tokens = count_tokens(part)
    if tokens > req.max_tokens:
        raise InvalidInput(
            f"chunk {index} holds {tokens:,} tokens, more than max_tokens={req.max_tokens:,}; send "
            f"max_tokens={min(max(tokens, 100), MAX_READ_TOKENS)} or read it with mode 'lines'"
        )
    return Part(part, chunk_call(req, text, size, index + 1) if index + 1 < total else None)


def _select(req: EvidenceGetRequest, text: str, row: EvidenceRow, chunks: int) -> Part:
    if req.mode == "chunk":
        return _chunk(req, text, row.chunk_chars, chunks)
    lines = split_lines(text)
    if req.mode == "grep":
        return _grep(req, lines)
    size = row.chunk_chars
    first, last = 0, len(lines)
    if req.mode == "head":
        last = min(req.n, len(lines))
    elif req.mode == "tail":
        first = max(0, len(lines) - req.n)
    elif req.mode == "lines":
        first, last = min((req.start or 1) - 1, len(lines)), min(req.end or len(lines), len(lines))
    part = _line_window(req, text, size, lines, first, last)
    if part.next is None and last < len(lines):
        return Part(part.content, {"ref": req.ref, "mode": "lines", "start": last + 1})
    if part.next is None and first > 0 and req.mode == "tail":
        return Part(part.content, {"ref": req.ref, "mode": "lines", "start": 1, "end": first})
    return part


async def _read(scope: Scope, ref: str) -> tuple[EvidenceRow, str]:
    async with scope.store.snapshot() as tx:
        row = await load_row(tx, scope, ref, prefix_ok=True)
        return row, await CONTENTS.content(tx, row)


async def evidence_get(scope: Scope, req: EvidenceGetRequest) -> EvidenceContent:
    """The requested part of an item; raises NotFound for an unknown ref, InvalidInput for a bad pattern or chunk,
    or a short ref (as working sets show) that more than one record starts with."""
    try:
        row, text = await _read(scope, req.ref)
    except NotFound:
        if not await take_offloads(scope):  # a hook may have offloaded it a moment ago
            raise
        row, text = await _read(scope, req.ref)
    req = req.model_copy(update={"ref": row.ref})  # `next` names the full ref
    chunks = max(1, -(-len(text) // row.chunk_chars))
    part = await anyio.to_thread.run_sync(_select, req, text, row, chunks)  # long greps must not stall the server
    return EvidenceContent(
        ref=row.ref,
        mode=req.mode,
        content=part.content,
        truncated=part.truncated,
        total_tokens=row.tokens,
        total_lines=row.lines,
        total_chunks=chunks,
        returned_tokens=count_tokens(part.content),
        next=part.next,
        kind=row.kind,
        source=row.source,
        title=row.title,
    )
