"""compress_history: a long agent history made short without losing anything.

Three bands, newest first: the recent band (the last `keep_recent` messages, byte-identical),
the shaped band (the `shape_window` messages before it, each tool output replaced by its
preview and ref) and the digest band (everything older, folded into one digest message).
The system prompt and the task statement stay pinned; every tool output that leaves is
offloaded to evidence first; a tool call and its output are never split across bands.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from typing import Any

import anyio

from ctxkeep.errors import InvalidInput
from ctxkeep.models.checkpoint import TaskState, Verification
from ctxkeep.models.compress import MAX_INLINE_TOKENS, CompressRequest, CompressResult, SemanticBoundary
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.storage import CursorRow, DigestRow
from ctxkeep.text import canonical_json, utc_text
from ctxkeep.tokens import count_tokens
from ctxkeep.tools.checkpoint import latest_state, summary_request_text, verify_summary
from ctxkeep.tools.compression.digest import Step, build_digest, command_of
from ctxkeep.tools.compression.transcript import (
    allowed_roots,
    parse_transcript,
    read_transcript,
    resolve_transcript,
)
from ctxkeep.tools.evidence import evidence_put
from ctxkeep.tools.shared.messages import (
    Call,
    Format,
    Message,
    Output,
    detect_format,
    parse,
    render_for_count,
    replace_outputs,
)
from ctxkeep.tools.shared.preview import shape_tool_output
from ctxkeep.tools.shared.tool_outputs import says_nothing, view_ref
from ctxkeep.tools.redaction.redact import redact_secrets
from ctxkeep.tools.redaction.stored import redacted
from ctxkeep.tools.scope import Scope

PINNED_TASK_TOKENS = 8_000
_PASSED = re.compile(
    r"\b\d+ passed\b|^OK\b|\bAll tests passed\b|\btests? (?:now )?pass(?:es|ed)?\b", re.IGNORECASE | re.MULTILINE
)
_FAILED = re.compile(r"\b\d+ failed\b|\bFAILED\b|\bTraceback\b", re.IGNORECASE)


async def _load(
    scope: Scope, req: CompressRequest, env: Mapping[str, str]
) -> tuple[list[dict[str, Any]], Format, int, str]:
    """The messages, their format, skipped transcript records, and a name for the source."""
    if req.transcript_path is not None:
        if not scope.local_files:
            raise InvalidInput(
                "transcript_path names a file where the server runs, and a shared server never reads its files for a "
                "remote user; send the transcript's text as transcript (its JSONL lines), or the history as messages"
            )
        path = resolve_transcript(req.transcript_path, allowed_roots(env, scope.project), scope.project)
        transcript = await anyio.to_thread.run_sync(read_transcript, path)
        return transcript.messages, "claude_code", transcript.skipped, str(path)
    if req.transcript is not None:
        transcript = await anyio.to_thread.run_sync(parse_transcript, req.transcript.splitlines())
        return transcript.messages, "claude_code", transcript.skipped, "transcript"
    messages = req.messages or []
    if any(not isinstance(m, dict) or not isinstance(m.get("role"), str) for m in messages):
        raise InvalidInput(
            "every message must be an object with a string role (and content); send the history as a list"
        )
    if not messages:
        raise InvalidInput("messages is empty; send the history to compress")
    return messages, req.format or detect_format(messages), 0, "messages"


def _pinned_end(messages: list[Message]) -> int:
    """Leading system prompts, then the task statement (the first user message), stay pinned."""
    index = 0
    while index < len(messages) and messages[index].role in ("system", "developer"):
        index += 1
    if index < len(messages) and messages[index].role == "user" and not messages[index].outputs:
        index += 1
    return index


def _band_start(messages: list[Message], start: int, floor: int) -> int:
    """Move a band boundary earlier until it does not separate tool outputs from their call."""
    start = max(start, floor)
    while floor < start < len(messages) and messages[start].outputs:
        start -= 1
    return start


def _steps(messages: list[Message]) -> list[Step]:
    """Each tool output with the call it answers (by id, or the previous assistant call for generic histories)."""
    calls: dict[str | None, Call] = {}
    last_call: Call | None = None
    steps: list[Step] = []
    for message in messages:
        for call in message.calls:
            calls[call.id] = last_call = call
        for output in message.outputs:
            answered = calls.get(output.call_id) if output.call_id is not None else last_call
            # an output whose call is not in the history (trimmed by the client) is still offloaded
            steps.append(
                Step(call=answered or Call(output.call_id, "unknown_tool", None), output=output, message=message.index)
            )
    return steps


_SURROGATE = re.compile("[\ud800-\udfff]")


def _valid_text(text: str) -> str:
    """Lone surrogates (an emoji cut in half by the writer) become U+FFFD: they cannot be stored as UTF-8."""
    return _SURROGATE.sub("\ufffd", text)


def _redacted_json(value: Any) -> Any:
    """Every string in a JSON value with its secrets replaced. Text is redacted before it is encoded: in JSON a
    line break is `\\n`, so the rules that read lines would not see the lines of an encoded `.env`."""
    return redacted(value)[0]


def _evidence_item(step: Step, task_id: str | None, redact: bool) -> EvidenceItem:
    assert step.output is not None
    command = command_of(step.call)  # redacted whole before it is cut, so no piece of a secret is left in the title
    title = f"{step.call.name}: {(redact_secrets(command)[0] if redact else command)[:120]}"
    return EvidenceItem(
        content=_valid_text(step.output.text),
        kind="tool_result",
        source=_valid_text(step.call.name) or "tool",
        title=_valid_text(title),
        task_id=task_id,
        redact=redact,
    )


def _shaped(output: Output, step_by_output: dict[int, Step]) -> str:
    """The output's preview and ref, or the output itself when that is no longer (short outputs stay as they are)."""
    step = step_by_output[id(output)]
    if step.ref is None or view_ref(output.text) is not None:  # not evidence, or already a view of its evidence
        return output.text
    preview = shape_tool_output(output.text, "tool_result", step.call.name)
    shaped = f"{preview}\n[ctxkeep: full output stored as {step.ref}; evidence_get reads it back]"
    return shaped if len(shaped) < len(output.text) else output.text


def _tokens(messages: list[dict[str, Any]]) -> list[int]:
    """Each message's cost in tokens (role + content text), counted once."""
    return [count_tokens(render_for_count(m)) for m in messages]


def _boundary(messages: list[Message], steps: list[Step]) -> SemanticBoundary | None:
    found: list[SemanticBoundary] = []
    for step in steps:
        name, text = step.call.name.lower(), step.output.text if step.output else ""
        if name in ("task", "agent"):
            found.append(
                SemanticBoundary(
                    kind="subagent_returned", message_index=step.message, detail=command_of(step.call)[:120]
                )
            )
        elif name in ("exitplanmode", "todowrite") and "in_progress" not in json.dumps(step.call.input):
            found.append(
                SemanticBoundary(kind="phase_completed", message_index=step.message, detail=f"{step.call.name} call")
            )
        elif _PASSED.search(text) and not _FAILED.search(text):
            found.append(
                SemanticBoundary(
                    kind="verification_passed", message_index=step.message, detail=command_of(step.call)[:120]
                )
            )
    for message in messages:
        if message.role == "assistant" and re.search(r"\bapprov(?:e|al)\b[^?\n]*\?", message.text, re.IGNORECASE):
            found.append(
                SemanticBoundary(kind="approval_requested", message_index=message.index, detail=message.text[:120])
            )
    return max(found, key=lambda b: b.message_index) if found else None


def _summary_request(first: int, last: int, state: TaskState | None, task_id: str | None) -> str:
    return f"Messages {first}–{last} are folded into the digest.\n" + summary_request_text(
        task_id or "<your task_id>", state
    )


def _band(first: int, end: int) -> list[int]:
    return [first, end - 1] if end > first else []


def _prefix_hash(raw: list[dict[str, Any]], count: int) -> str:
    return hashlib.sha256(canonical_json(raw[:count]).encode("utf-8", "surrogatepass")).hexdigest()


def _source_key(source: str, fmt: str, raw: list[dict[str, Any]], pinned: int, task_id: str | None) -> str:
    """One cursor per history: the transcript path, or the pinned messages (of a list or a transcript's text); per
    task, since refs name the task."""
    if source in ("messages", "transcript"):
        source = f"{source}:" + _prefix_hash(raw, max(pinned, 1))[:32]
    return f"{task_id or ''}\n{fmt}\n{source}"


async def _offload(
    scope: Scope,
    steps: list[Step],
    task_id: str | None,
    key: str,
    raw: list[dict[str, Any]],
    upto: int,
    redact: bool = True,
) -> int:
    """Store every output of `steps` as evidence and note its ref on the step; returns how many refs the cursor gave.

    A shaped view of the hooks takes the ref of the output it stands for (when that is evidence, or waits in the
    inbox); an edit's confirmation or a call of a tool that does not exist gets none (`tools.shared.tool_outputs`).
    Outputs of a prefix compressed before (same messages, same hash) take their refs from the
    source's cursor instead of being redacted, counted and indexed again.
    """
    async with scope.store.snapshot() as tx:
        cursor = await tx.cursors.get(scope.project, key)
    reused: set[int] = set()
    if cursor and cursor.prefix_count <= len(raw) and _prefix_hash(raw, cursor.prefix_count) == cursor.prefix_hash:
        known = list(
            zip([s for s in steps if s.message < cursor.prefix_count], json.loads(cursor.refs_json), strict=False)
        )
        own = {ref for step, ref in known if ref and not (step.output and view_ref(step.output.text))}
        async with scope.store.snapshot() as tx:
            if len(await tx.evidence.rows(scope.project, list(own))) != len(own):
                known = []  # some were deleted since: put everything again
        for step, ref in known:
            step.ref = ref
            reused.add(id(step))
    fresh = [step for step in steps if id(step) not in reused and not _says_nothing(step)]
    await _views(scope, fresh)
    fresh = [step for step in fresh if step.ref is None]
    if fresh:
        stored = await evidence_put(scope, [_evidence_item(step, task_id, redact) for step in fresh])
        for step, ref in zip(fresh, stored.refs, strict=True):
            step.ref = ref
    async with scope.store.transaction() as tx:
        await tx.cursors.put(
            scope.project,
            CursorRow(
                key, upto, _prefix_hash(raw, upto), json.dumps([s.ref for s in steps]), utc_text(scope.clock()) or ""
            ),
        )
    return len(reused)


def _says_nothing(step: Step) -> bool:
    output = step.output
    return output is not None and says_nothing(step.call.name, output.text, output.is_error)


async def _views(scope: Scope, steps: list[Step]) -> None:
    """Give each shaped view among `steps` the ref of the output it stands for, when that output is evidence or waits
    in the hooks' inbox (a text that only looks like a view is kept as an output of its own)."""
    named = {id(step): view_ref(step.output.text) for step in steps if step.output is not None}
    refs = [ref for ref in named.values() if ref]
    if not refs:
        return
    async with scope.store.snapshot() as tx:
        there = set(await tx.evidence.rows(scope.project, refs)) | await tx.inbox.holding(scope.project, refs)
    if scope.spool is not None:
        async with scope.spool.snapshot() as tx:
            there |= await tx.inbox.holding(scope.project, refs)
    for step in steps:
        ref = named.get(id(step))
        if ref and ref in there:
            step.ref = ref


async def _store_band(scope: Scope, band: list[dict[str, Any]], source: str, task_id: str | None, redact: bool) -> str:
    """The digest band verbatim (JSON, its strings already redacted), so nothing folded into the digest is beyond reach."""
    text = _valid_text(json.dumps(band, ensure_ascii=False, sort_keys=True))
    stored = await evidence_put(
        scope,
        [
            EvidenceItem(
                content=text,
                kind="transcript",
                source=_valid_text(source)[:4000],
                title="digested messages, verbatim",
                task_id=task_id,
                redact=redact,
            )
        ],
    )
    return stored.refs[0]


async def _pinned_task(scope: Scope, message: Message, task_id: str | None, redact: bool) -> dict[str, Any]:
    """The task statement verbatim, or its preview and ref when it is huge."""
    if count_tokens(message.text) <= PINNED_TASK_TOKENS:
        return message.raw
    stored = await evidence_put(
        scope,
        [EvidenceItem(content=message.text, kind="message", title="task statement", task_id=task_id, redact=redact)],
    )
    item = stored.items[0]
    return {
        "role": message.role,
        "content": f"{item.preview}\n[ctxkeep: the full task statement is stored as {item.ref}]",
    }


async def _verify_summary(scope: Scope, req: CompressRequest) -> tuple[TaskState | None, Verification | None]:
    state = await latest_state(scope, req.task_id) if req.task_id else None
    if req.summary is None:
        return state, None
    if state is None:
        raise InvalidInput(
            "a summary is checked against the task's latest checkpoint: send task_id of a task that has "
            "one (checkpoint_save it first)"
        )
    violations = verify_summary(state, req.summary)
    return state, Verification(ok=not violations, violations=violations)


def _digest(
    raw: list[dict[str, Any]],
    band: list[dict[str, Any]],
    fmt: Format,
    messages: list[Message],
    offloaded: list[Step],
    bounds: tuple[int, int, int],
    budget: int,
    band_ref: str | None,
    redact: bool,
) -> str:
    """The digest of the band raw[pinned:shaped]. With redact, built from the redacted band (`band`), so a command or a
    line it quotes is never cut inside a secret, then redacted again: a digest line joins pieces of text."""
    pinned, shaped, recent = bounds
    steps = offloaded
    if redact:
        messages = parse(raw[:pinned] + band + raw[shaped:], fmt)
        clean = [step for step in _steps(messages) if pinned <= step.message < recent]
        if len(clean) == len(offloaded):  # the same calls in the same order, only their text redacted
            for step, original in zip(clean, offloaded, strict=True):
                step.ref = original.ref
            steps = clean
    digest = build_digest(
        messages[pinned:shaped],
        [s for s in steps if s.message < shaped],
        budget,
        count_tokens,
        later=[s for s in _steps(messages) if s.message >= shaped],
        band_ref=band_ref,
    )
    return redact_secrets(digest)[0] if redact else digest


async def compress_history(
    scope: Scope, req: CompressRequest, env: Mapping[str, str] | None = None, *, redact: bool = True
) -> CompressResult:
    """The compressed history, its digest and the refs of what was offloaded; stores the digest with the task.

    Secrets are redacted in everything stored (offloads, the verbatim band, the digest, an accepted summary, the
    history stored as a ref) and in the digest returned; redact=False stores them as given, as evidence_put's
    `redact: false` does. Raises InvalidInput (bad messages, a transcript outside the allowed roots, a summary
    without a checkpointed task) and NotFound (a missing transcript file).
    """
    raw, fmt, skipped, source = await _load(scope, req, os.environ if env is None else env)
    messages = await anyio.to_thread.run_sync(parse, raw, fmt)
    pinned = _pinned_end(messages)
    recent = _band_start(messages, len(messages) - req.keep_recent, pinned)
    shaped = _band_start(messages, recent - req.shape_window, pinned)
    offloaded = [step for step in _steps(messages) if pinned <= step.message < recent]
    await _offload(
        scope, offloaded, req.task_id, _source_key(source, fmt, raw, pinned, req.task_id), raw, recent, redact
    )
    by_output = {id(step.output): step for step in offloaded}
    every_step = _steps(messages)
    digest = ""
    if shaped > pinned:
        band = _redacted_json(raw[pinned:shaped]) if redact else raw[pinned:shaped]
        # a transcript file is itself the verbatim record; a list of messages is stored before it is folded
        band_ref = None if req.transcript_path else await _store_band(scope, band, source, req.task_id, redact)
        digest = await anyio.to_thread.run_sync(
            lambda: _digest(
                raw, band, fmt, messages, offloaded, (pinned, shaped, recent), req.digest_tokens, band_ref, redact
            )
        )
    head = [m.raw for m in messages[:pinned]]
    if pinned and messages[pinned - 1].role == "user":
        head[-1] = await _pinned_task(scope, messages[pinned - 1], req.task_id, redact)
    before = _tokens(raw)
    if digest and count_tokens(digest) >= sum(before[pinned:shaped]):
        digest = ""  # a band this short costs less verbatim than digested
        folded: list[dict[str, Any]] = [m.raw for m in messages[pinned:shaped]]
    else:
        folded = [{"role": "user", "content": digest}] if digest else []
    middle = folded + [
        replace_outputs(m, fmt, lambda output: _shaped(output, by_output)) for m in messages[shaped:recent]
    ]
    out = head + middle + [m.raw for m in messages[recent:]]
    state, verification = await _verify_summary(scope, req)
    if req.task_id:
        accepted = req.summary if verification and verification.ok else None
        accepted = redact_secrets(accepted)[0] if accepted and redact else accepted
        async with scope.store.transaction() as tx:
            await tx.digests.put(
                scope.project, DigestRow(req.task_id, digest, accepted, source, utc_text(scope.clock()) or "")
            )
    tokens_middle = _tokens(middle)
    tokens_after = sum(_tokens(head)) + sum(tokens_middle) + sum(before[recent:])
    messages_ref = None
    # inline only when the whole serialized history fits (images, thinking blocks and JSON escaping count too)
    if (
        tokens_after > MAX_INLINE_TOKENS
        or count_tokens(json.dumps(out, ensure_ascii=False)) > MAX_INLINE_TOKENS - 3_000
    ):
        kept = _redacted_json(out) if redact else out  # redacted before it is encoded, as the band is
        stored = await evidence_put(
            scope,
            [
                EvidenceItem(
                    content=json.dumps(kept, ensure_ascii=False, sort_keys=True),
                    kind="transcript",
                    title="compressed history",
                    source=source,
                    task_id=req.task_id,
                    redact=redact,
                )
            ],
        )
        messages_ref = stored.refs[0]
    return CompressResult(
        format=fmt,
        messages=None if messages_ref else out,
        messages_ref=messages_ref,
        digest=digest,
        evidence_refs=[step.ref for step in offloaded if step.ref],
        tokens_before=sum(before),
        tokens_after=tokens_after,
        span_tokens_before=sum(before[pinned:recent]),
        span_tokens_after=sum(tokens_middle),
        bands={
            "pinned": _band(0, pinned),
            "digest": _band(pinned, shaped),
            "shaped": _band(shaped, recent),
            "recent": _band(recent, len(messages)),
        },
        skipped_records=skipped,
        summary_request=_summary_request(pinned, recent - 1, state, req.task_id),
        verification=verification,
        semantic_boundary=_boundary(messages, every_step),
    )


def semantic_boundary(messages: list[Message]) -> SemanticBoundary | None:
    """The latest phase end in `messages` (verification passed, approval asked, subagent returned, plan done)."""
    return _boundary(messages, _steps(messages))
