"""A loopback mock of the Anthropic Messages API for the real Claude Code CLI (stdlib only).

Serves `POST /v1/messages` (streamed or not) and `/v1/messages/count_tokens`. Request kinds:
`main` (the agent loop: has `tools`; consumes the script), `compact` (the compaction prompt: answered
with a canned `<summary>`), `side` (no tools: a canned line), `count_tokens`, `other` (404).
Point Claude Code at it with ANTHROPIC_BASE_URL=<url> ANTHROPIC_API_KEY=<anything>.
"""

from __future__ import annotations

import json
import re
import sys
import uuid
from collections.abc import Iterator
from typing import Any

from tests.e2e.mock_api import MockHandler, MockServer, Turn, fill, resolve

COMPACT = re.compile(
    r"create a detailed summary of the conversation|CRITICAL: Respond with TEXT ONLY|summarize the conversation", re.I
)
SUMMARY = "<analysis>mock</analysis>\n<summary>MOCK COMPACT SUMMARY: the user ran some commands.</summary>"


def text_of(content: Any) -> str:
    """The text of a message content or a tool_result content: a string, or its text blocks joined."""
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def _last_user_text(body: dict[str, Any]) -> str:
    for message in reversed(body.get("messages") or []):
        if message.get("role") == "user":
            return text_of(message.get("content"))
    return ""


def classify(body: dict[str, Any]) -> str:
    if COMPACT.search(_last_user_text(body)):
        return "compact"
    return "main" if body.get("tools") else "side"


def blocks(turn: Turn, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """The reply's content blocks and stop reason; tool names resolved against the request's tools."""
    names = [t.get("name", "") for t in body.get("tools") or []]
    out: list[dict[str, Any]] = [{"type": "text", "text": turn.text}] if turn.text else []
    for tool, arguments in turn.calls:
        out.append(
            {
                "type": "tool_use",
                "id": "toolu_" + uuid.uuid4().hex[:24],
                "name": resolve(names, tool, "__"),
                "input": arguments,
            }
        )
    return out or [{"type": "text", "text": "(empty)"}], "tool_use" if turn.calls else "end_turn"


def _events(model: str, content: list[dict[str, Any]], stop: str) -> Iterator[tuple[str, Any]]:
    usage = {"input_tokens": 100, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": "msg_" + uuid.uuid4().hex[:24],
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        },
    )
    for index, block in enumerate(content):
        if block["type"] == "text":
            start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield "content_block_start", {"type": "content_block_start", "index": index, "content_block": start}
        yield "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 20},
        },
    )
    yield "message_stop", {"type": "message_stop"}


class AnthropicHandler(MockHandler):
    def do_POST(self) -> None:
        body = self.body()
        path = self.path.split("?")[0]
        if path.endswith("/v1/messages/count_tokens"):
            self.record(body, "count_tokens")
            return self.send_json(200, {"input_tokens": 1000})
        if not path.endswith("/v1/messages") or not isinstance(body, dict):
            self.record(body, "other")
            return self.send_json(404, {"type": "error", "error": {"type": "not_found_error", "message": "not mocked"}})
        kind = classify(body)
        index, turn = (
            self.server.script.next()
            if kind == "main"
            else (None, Turn(text=SUMMARY if kind == "compact" else "Mock side reply"))
        )
        turn = fill(turn, body)
        self.record(body, kind, index)
        content, stop = blocks(turn, body)
        model = body.get("model") or "claude-mock"
        if not body.get("stream"):
            return self.send_json(
                200,
                {
                    "id": "msg_mock",
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": content,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": {"input_tokens": 100, "output_tokens": 20},
                },
            )
        self.send_sse(_events(model, content, stop))


def report_usage_once(monkeypatch: Any, input_tokens: int) -> None:
    """The mock's first reply reports `input_tokens` (the mock runs in the test's process; `monkeypatch` is
    pytest's): near the model's context window, Claude Code compacts automatically before its next request."""
    original, calls = _events, [0]

    def events(model: str, content: list[dict[str, Any]], stop: str) -> Iterator[tuple[str, Any]]:
        for name, event in original(model, content, stop):
            if name == "message_start" and calls[0] == 0:
                calls[0] += 1
                event = json.loads(json.dumps(event))
                event["message"]["usage"]["input_tokens"] = input_tokens
            yield name, event

    monkeypatch.setattr(sys.modules[__name__], "_events", events)


def mock(script: list[Turn]) -> MockServer:
    return MockServer(AnthropicHandler, script)


# What the model saw, read from a recorded request body.


def tools(body: dict[str, Any], prefix: str = "mcp__ctxkeep__") -> list[dict[str, Any]]:
    """The advertised tools whose name starts with `prefix` ({name, description, input_schema} as sent)."""
    return [t for t in body.get("tools") or [] if str(t.get("name", "")).startswith(prefix)]


def instructions_text(body: dict[str, Any]) -> str:
    """The system prompt (its text blocks joined; Claude Code puts MCP server `instructions` there under
    "# MCP Server Instructions"), plus the text of any mid-conversation system messages."""
    system = body.get("system")
    parts = [text_of(system)] if system else []
    parts += [text_of(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "system"]
    return "\n".join(parts)


def tool_results(body: dict[str, Any]) -> list[str]:
    """Every tool result in the request, as the model reads it (the text of each tool_result block)."""
    found = []
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, list):
            found += [
                text_of(b.get("content")) for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
    return found
