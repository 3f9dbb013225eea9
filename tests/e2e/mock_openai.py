"""A loopback mock of the OpenAI Responses API for the real Codex CLI (stdlib only).

Serves `POST /v1/responses` as server-sent events and `GET /v1/models`. Request kinds: `main` (a
turn; consumes the script), `compact` (Codex's compaction request, told apart by its
`x-codex-turn-metadata` header: answered with a canned summary), `other` (404). Codex reaches it
through a custom model provider whose base_url is `<url>/v1`.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any

from tests.e2e.mock_api import MockHandler, MockServer, Turn

SUMMARY = "MOCK COMPACT SUMMARY: the user ran some commands."


def function_tools(body: dict[str, Any]) -> Iterator[tuple[str | None, dict[str, Any]]]:
    """(namespace, tool) for every function tool advertised, namespaced MCP tools included."""
    for tool in body.get("tools") or []:
        if tool.get("type") == "function":
            yield None, tool
        elif tool.get("type") == "namespace":
            for inner in tool.get("tools") or []:
                yield tool.get("name"), inner


def _resolve(body: dict[str, Any], want: str) -> tuple[str, str | None]:
    """(name, namespace) of the tool `want` names: a plain name, or `namespace__name` in Claude style."""
    for namespace, tool in function_tools(body):
        full = f"{namespace}__{tool.get('name')}" if namespace else tool.get("name")
        if want in (tool.get("name"), full):
            return str(tool.get("name")), namespace
    return want, None


def classify(headers: dict[str, str]) -> str:
    try:
        meta = json.loads(headers.get("x-codex-turn-metadata") or "{}")
    except ValueError:
        meta = {}
    return "compact" if isinstance(meta, dict) and meta.get("request_kind") == "compaction" else "main"


def _items(turn: Turn, body: dict[str, Any], seq: int) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if turn.text:
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "id": f"msg_{seq}",
                "content": [{"type": "output_text", "text": turn.text}],
            }
        )
    for n, (tool, arguments) in enumerate(turn.calls):
        name, namespace = _resolve(body, tool)
        item = {
            "type": "function_call",
            "id": f"fc_{seq}_{n}",
            "call_id": f"call_{seq}_{n}",
            "name": name,
            "arguments": json.dumps(arguments),
        }
        items.append(item | ({"namespace": namespace} if namespace else {}))
    return items or [
        {
            "type": "message",
            "role": "assistant",
            "id": f"msg_{seq}",
            "content": [{"type": "output_text", "text": "(empty)"}],
        }
    ]


def _events(items: list[dict[str, Any]], seq: int) -> Iterator[tuple[str, Any]]:
    yield "response.created", {"type": "response.created", "response": {"id": f"resp_{seq}"}}
    for item in items:
        if item["type"] == "message":  # Codex wants the item added before its text delta
            yield "response.output_item.added", {"type": "response.output_item.added", "item": item | {"content": []}}
            text = item["content"][0]["text"]
            yield (
                "response.output_text.delta",
                {"type": "response.output_text.delta", "delta": text, "item_id": item["id"]},
            )
        yield "response.output_item.done", {"type": "response.output_item.done", "item": item}
    usage = {
        "input_tokens": 10,
        "input_tokens_details": None,
        "output_tokens": 5,
        "output_tokens_details": None,
        "total_tokens": 15,
    }
    yield "response.completed", {"type": "response.completed", "response": {"id": f"resp_{seq}", "usage": usage}}


class OpenAIHandler(MockHandler):
    def do_GET(self) -> None:
        if self.path.split("?")[0].endswith("/models"):
            self.record(None, "other")
            return self.send_json(200, {"object": "list", "data": [], "models": []})
        super().do_GET()

    def do_POST(self) -> None:
        body = self.body()
        if not self.path.split("?")[0].endswith("/responses") or not isinstance(body, dict):
            self.record(body, "other")
            return self.send_json(404, {"error": {"message": "not mocked"}})
        kind = classify({k.lower(): v for k, v in self.headers.items()})
        index, turn = self.server.script.next() if kind == "main" else (None, Turn(text=SUMMARY))
        self.record(body, kind, index)
        seq = len(self.server.requests)
        self.send_sse(_events(_items(turn, body, seq), seq))


def report_usage_once(monkeypatch: Any, input_tokens: int) -> None:
    """The mock's first agent-loop reply reports `input_tokens` (the mock runs in the test's process; `monkeypatch`
    is pytest's), so a Codex configured with a lower `model_auto_compact_token_limit` compacts before its next turn."""
    original, calls = _events, [0]

    def events(items: list[dict[str, Any]], seq: int) -> Iterator[tuple[str, Any]]:
        for name, event in original(items, seq):
            if name == "response.completed" and calls[0] == 0:
                calls[0] += 1
                event = json.loads(json.dumps(event))
                event["response"]["usage"].update(input_tokens=input_tokens, total_tokens=input_tokens + 5)
            yield name, event

    monkeypatch.setattr(sys.modules[__name__], "_events", events)


def mock(script: list[Turn]) -> MockServer:
    return MockServer(OpenAIHandler, script)


# What the model saw, read from a recorded request body.


def tools(body: dict[str, Any], namespace: str = "mcp__ctxkeep") -> list[dict[str, Any]]:
    """The function tools advertised in `namespace` ({type, name, description, parameters, …} as sent)."""
    return [tool for ns, tool in function_tools(body) if ns == namespace]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(part.get("text", "")) for part in content or [] if isinstance(part, dict))


def instructions_text(body: dict[str, Any]) -> str:
    """What the model reads as instructions: the base instructions, every developer and system message, and each
    MCP namespace's description (where Codex puts a server's `instructions`)."""
    parts = [str(body.get("instructions") or "")]
    parts += [
        _content_text(i.get("content"))
        for i in body.get("input") or []
        if isinstance(i, dict) and i.get("role") in ("developer", "system")
    ]
    parts += [str(t.get("description") or "") for t in body.get("tools") or [] if t.get("type") == "namespace"]
    return "\n".join(parts)


WALL_TIME = "Wall time:"


def tool_results(body: dict[str, Any]) -> list[str]:
    """Every function_call_output in the request as the model reads it, without Codex's
    `Wall time: … seconds\\nOutput:` line, which Codex puts before every tool output."""
    found = []
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            output = item.get("output")
            if isinstance(output, list):
                parts = [str(p.get("text", "")) for p in output if isinstance(p, dict)]
                if parts and parts[0].startswith(WALL_TIME):
                    parts = parts[1:]
                found.append("\n".join(parts))
            else:
                value = str(output)
                if value.startswith(WALL_TIME):
                    value = (
                        value.split("\nOutput:\n", 1)[-1] if "\nOutput:\n" in value else value.split("\nOutput:", 1)[-1]
                    )
                found.append(value)
    return found
