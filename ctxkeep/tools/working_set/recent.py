"""The recent slot of a working set: the client's newest messages, as sent, newest kept when they do not all fit.

In markdown they become a transcript (role, text, tool calls and outputs); in the Anthropic and
OpenAI formats they are returned unchanged. Messages are dropped oldest first, whole, and never
so that a tool result is left without the call it answers. For the prompt cache the start moves
rarely: the previous start is kept while the messages from it still fit, and when it must move
it moves far enough to leave half the slot for the messages still to come.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ctxkeep.errors import InvalidInput
from ctxkeep.models.working_set import DroppedItem, WorkingSetFormat
from ctxkeep.tokens import count_joined
from ctxkeep.tools.shared.messages import Message, detect_format, parse

HEADER = "## Recent messages (since the last compression)\n"
_TOOL_TEXT_CHARS = 2_000


@dataclass(frozen=True)
class RecentStart:
    """Where the kept messages began: the index in the list sent and a hash of that message."""

    index: int
    anchor: str


@dataclass(frozen=True)
class RecentSlot:
    messages: list[dict[str, Any]]  # kept raw messages, oldest first
    text: str  # their markdown (empty for the message formats)
    tokens: int
    needed: int  # tokens all of them would have taken
    dropped: list[DroppedItem]
    start: RecentStart | None = None


def message_json(message: dict[str, Any]) -> str:
    """How a recent message is counted in the message formats: all of it (images, thinking, extra keys), as JSON."""
    return json.dumps(message, sort_keys=True, ensure_ascii=False, default=str)


def anchor(message: dict[str, Any]) -> str:
    return hashlib.sha256(
        json.dumps(message, sort_keys=True, ensure_ascii=False, default=str).encode("utf-8", "surrogatepass")
    ).hexdigest()[:16]


_ANTHROPIC_ONLY = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})


def _shape(messages: list[dict[str, Any]]) -> str:
    """openai when OpenAI tool structure appears, anthropic when Anthropic tool blocks do, else generic (both read it)."""
    if detect_format(messages) == "openai":
        return "openai"
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") in _ANTHROPIC_ONLY for b in content):
            return "anthropic"
    return "generic"


def check_format(messages: list[dict[str, Any]], fmt: WorkingSetFormat) -> None:
    """Refuses recent messages whose tool calls are in the other provider's shape than the requested format."""
    detected = _shape(messages)
    if fmt != "markdown" and detected not in ("generic", fmt):
        raise InvalidInput(
            f"recent_messages are {detected}-shaped but format is '{fmt}'; send format='{detected}' "
            f"or the messages in {fmt} shape"
        )


def _markdown(message: Message) -> str:
    parts = [f"### {message.role or 'unknown'}"]
    if message.text:
        parts.append(message.text)
    for call in message.calls:
        arguments = (
            call.input
            if isinstance(call.input, str)
            else json.dumps(call.input, sort_keys=True, ensure_ascii=False, default=str)
        )
        parts.append(f"[tool call {call.name}] {arguments[:_TOOL_TEXT_CHARS]}")
    for output in message.outputs:
        text = output.text if len(output.text) <= _TOOL_TEXT_CHARS else output.text[:_TOOL_TEXT_CHARS] + "…"
        parts.append(f"[tool output{' (error)' if output.is_error else ''}] {text}")
    return "\n".join(parts) + "\n"


def _answers_a_call(message: Message) -> bool:
    return bool(message.outputs) and message.role in ("tool", "user")


def _start(costs: list[int], header: int, limit: int, previous: RecentStart | None, raw: list[dict[str, Any]]) -> int:
    """The first message to keep: 0 when all fit; else the previous start while it fits; else one that leaves half the slot free."""
    if header + sum(costs) <= limit:
        return 0
    if (
        previous is not None
        and 0 < previous.index < len(raw)
        and anchor(raw[previous.index]) == previous.anchor
        and header + sum(costs[previous.index :]) <= limit
    ):
        return previous.index
    for room in (limit // 2, limit):
        start, used = len(costs), header
        while start > 0 and used + costs[start - 1] <= room:
            start -= 1
            used += costs[start]
        if start < len(costs):
            return start
    return len(costs)


def recent_slot(
    raw: list[dict[str, Any]],
    fmt: WorkingSetFormat,
    limit: int,
    count: Callable[[str], int],
    previous: RecentStart | None = None,
) -> RecentSlot:
    """The newest messages that fit `limit` tokens (counted as role + content text, or as markdown)."""
    if not raw:
        return RecentSlot([], "", 0, 0, [])
    messages = parse(raw, detect_format(raw))
    costs = [count(_markdown(m) if fmt == "markdown" else message_json(m.raw)) for m in messages]
    header = count(HEADER) if fmt == "markdown" else 0
    needed = header + sum(costs)
    start = _start(costs, header, limit, previous, raw)
    while 0 < start < len(messages) and _answers_a_call(messages[start]):
        start += 1
    used = header + sum(costs[start:])
    dropped = [
        DroppedItem(slot="recent", item=f"message {m.index} ({m.role})", reason="budget") for m in messages[:start]
    ]
    kept = messages[start:]
    if not kept:
        return RecentSlot([], "", 0, needed, dropped)
    pieces = [HEADER, *(_markdown(m) for m in kept)] if fmt == "markdown" else []
    text = "".join(pieces)
    return RecentSlot(
        [m.raw for m in kept],
        text,
        count_joined(pieces, [header, *costs[start:]], count) if text else used,
        needed,
        dropped,
        RecentStart(start, anchor(raw[start])),
    )
