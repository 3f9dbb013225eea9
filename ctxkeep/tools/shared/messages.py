"""Agent histories in four shapes, read into one view: who spoke, what text, which tool calls and outputs.

Formats: OpenAI chat (assistant `tool_calls`, `role: tool`), Anthropic messages (`tool_use` /
`tool_result` blocks), generic `[{role, content}]` where tool output comes back as user
messages (mini-swe-agent: `<returncode>…</returncode>` and `<output>`), and Claude Code
transcript JSONL, which is read into Anthropic-shaped messages. Each message keeps its raw
form, so the recent band can be returned byte for byte and tool outputs replaced in place.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal
from ctxkeep.text import LazyPattern

Format = Literal["openai", "anthropic", "generic", "claude_code"]

_GENERIC_OUTPUT = LazyPattern(r"<returncode>\s*-?\d+\s*</returncode>|<output>", re.IGNORECASE)
_BASH_BLOCK = LazyPattern(r"```(?:bash|sh|shell)[ \t]*\n(.*?)```", re.DOTALL)


@dataclass
class Call:
    """A tool call: its id (when the format has ids), tool name and input."""

    id: str | None
    name: str
    input: Any


@dataclass
class Output:
    """A tool output: the call it answers (when known), its text, whether the tool reported an error."""

    call_id: str | None
    text: str
    is_error: bool = False


@dataclass
class Message:
    index: int
    role: str
    raw: dict[str, Any]
    text: str = ""
    calls: list[Call] = field(default_factory=list)
    outputs: list[Output] = field(default_factory=list)


def _block_text(content: Any, depth: int = 0) -> str:
    """The plain text of a content value: a string, or the text blocks of a list (not tool blocks)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and depth < 8:
        return "\n".join(text for text in (_block_text(part, depth + 1) for part in content) if text)
    if isinstance(content, dict) and content.get("type") in ("text", "input_text", "output_text"):
        return str(content.get("text", ""))
    return ""


def _id(value: Any) -> str | None:
    return None if value is None else str(value)


def detect_format(messages: list[dict[str, Any]]) -> Format:
    """OpenAI when tool_calls or role tool appear; Anthropic when content comes as typed blocks; else generic."""
    for message in messages:
        if message.get("role") == "tool" or message.get("tool_calls"):
            return "openai"
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and "type" in b for b in content):
            return "anthropic"
    return "generic"


def _openai(index: int, raw: dict[str, Any]) -> Message:
    message = Message(index, str(raw.get("role", "")), raw, text=_block_text(raw.get("content")))
    calls = raw.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            message.calls.append(Call(_id(call.get("id")), str(function.get("name", "")), function.get("arguments")))
    if message.role == "tool":
        message.outputs.append(Output(_id(raw.get("tool_call_id")), message.text))
        message.text = ""
    return message


def _anthropic(index: int, raw: dict[str, Any]) -> Message:
    message = Message(index, str(raw.get("role", "")), raw)
    content = raw.get("content")
    texts = [content] if isinstance(content, str) else []
    for block in content if isinstance(content, list) else []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(str(block.get("text", "")))
        elif kind == "tool_use":
            message.calls.append(Call(_id(block.get("id")), str(block.get("name", "")), block.get("input")))
        elif kind == "tool_result":
            message.outputs.append(
                Output(_id(block.get("tool_use_id")), _block_text(block.get("content")), bool(block.get("is_error")))
            )
    message.text = "\n".join(texts)
    return message


def _generic(index: int, raw: dict[str, Any], first_user: bool) -> Message:
    text = _block_text(raw.get("content"))
    message = Message(index, str(raw.get("role", "")), raw, text=text)
    if message.role == "assistant":
        message.calls = [Call(None, "bash", command.strip()) for command in _BASH_BLOCK.findall(text)]
    elif message.role == "user" and not first_user and _GENERIC_OUTPUT.search(text):
        message.outputs.append(Output(None, text))
        message.text = ""
    return message


def parse(messages: list[dict[str, Any]], fmt: Format) -> list[Message]:
    """The messages in one view; `claude_code` input is the Anthropic-shaped list `read_transcript` returns."""
    parsed: list[Message] = []
    seen_user = False
    for index, raw in enumerate(messages):
        if fmt == "openai":
            parsed.append(_openai(index, raw))
        elif fmt in ("anthropic", "claude_code"):
            parsed.append(_anthropic(index, raw))
        else:
            parsed.append(_generic(index, raw, first_user=not seen_user and raw.get("role") == "user"))
        seen_user = seen_user or raw.get("role") == "user"
    return parsed


def replace_outputs(message: Message, fmt: Format, replace: Callable[[Output], str]) -> dict[str, Any]:
    """The raw message with each tool output's text replaced by `replace(output)`; everything else unchanged."""
    if not message.outputs:
        return message.raw
    if fmt in {"openai", "generic"}:
        return {**message.raw, "content": replace(message.outputs[0])}
    outputs = iter(message.outputs)  # the tool_result blocks, in the order they were read
    blocks = []
    for block in message.raw.get("content") or []:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            block = {**block, "content": replace(next(outputs))}
        blocks.append(block)
    return {**message.raw, "content": blocks}


def render_for_count(raw: dict[str, Any]) -> str:
    """The text a message costs: its role and its content (tool calls and outputs included)."""
    parts = [str(raw.get("role", "")), _block_text(raw.get("content"))]
    calls = raw.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            parts += [str(function.get("name", "")), str(function.get("arguments", ""))]
        elif call is not None:
            parts.append(json.dumps(call, ensure_ascii=False, default=str))
    content = raw.get("content")
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            parts += [
                str(block.get("name", "")),
                json.dumps(block.get("input"), sort_keys=True, ensure_ascii=False, default=str),
            ]
        elif isinstance(block, dict) and block.get("type") == "tool_result":
            parts.append(_block_text(block.get("content")))
    return "\n".join(part for part in parts if part)
