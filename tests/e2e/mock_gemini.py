"""A loopback mock of the Gemini API (v1beta) for the real Gemini CLI (stdlib only).

Serves `…:streamGenerateContent?alt=sse` (the agent loop: `main`, consumes the script),
`…:generateContent` (`side`: routing, next-speaker and compression calls, answered with JSON the CLI
accepts, or a `<state_snapshot>` for a compression request) and `…:countTokens`. Point the CLI at it
with GOOGLE_GEMINI_BASE_URL=<url> GEMINI_API_KEY=<anything>.
"""

from __future__ import annotations

import json
from typing import Any

from tests.e2e.mock_api import MockHandler, MockServer, Turn, resolve

SIDE = json.dumps({"reasoning": "mock", "model_choice": "flash", "next_speaker": "user"})
SNAPSHOT = "<state_snapshot>MOCK COMPACT SUMMARY: the user ran some commands.</state_snapshot>"


def declarations(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every function declaration the request advertises."""
    return [
        d
        for t in body.get("tools") or []
        for d in t.get("functionDeclarations") or t.get("function_declarations") or []
    ]


def _usage(tokens: int = 10) -> dict[str, int]:
    return {"promptTokenCount": tokens, "candidatesTokenCount": 5, "totalTokenCount": tokens + 5}


def _candidate(parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": _usage(),
        "modelVersion": "mock",
    }


def _parts(turn: Turn, body: dict[str, Any]) -> list[dict[str, Any]]:
    names = [str(d.get("name", "")) for d in declarations(body)]
    parts: list[dict[str, Any]] = [{"text": turn.text}] if turn.text else []
    parts += [
        {"functionCall": {"name": resolve(names, tool, "_"), "args": arguments}} for tool, arguments in turn.calls
    ]
    return parts or [{"text": "(empty)"}]


class GeminiHandler(MockHandler):
    def do_POST(self) -> None:
        body = self.body()
        path = self.path.split("?")[0]
        if path.endswith(":countTokens"):
            self.record(body, "count_tokens")
            return self.send_json(200, {"totalTokens": 10})
        if path.endswith(":generateContent"):
            self.record(body, "side")
            return self.send_json(
                200, _candidate([{"text": SNAPSHOT if "state_snapshot" in json.dumps(body) else SIDE}])
            )
        if not path.endswith(":streamGenerateContent") or not isinstance(body, dict):
            self.record(body, "other")
            return self.send_json(404, {"error": {"code": 404, "message": "not mocked", "status": "NOT_FOUND"}})
        index, turn = self.server.script.next()
        self.record(body, "main", index)
        self.send_sse([(None, _candidate(_parts(turn, body)))])


def mock(script: list[Turn]) -> MockServer:
    return MockServer(GeminiHandler, script)


# What the model saw, read from a recorded request body.


def tools(body: dict[str, Any], prefix: str = "mcp_ctxkeep_") -> list[dict[str, Any]]:
    """The declarations whose name starts with `prefix` ({name, description, parametersJsonSchema} as sent)."""
    return [d for d in declarations(body) if str(d.get("name", "")).startswith(prefix)]


def instructions_text(body: dict[str, Any]) -> str:
    """What the model reads besides tools: the system instruction and the text parts of every content (the CLI
    puts each MCP server's `instructions` into the first user content, under <project_context>)."""
    instruction = body.get("systemInstruction") or {}
    parts = [p for p in instruction.get("parts") or []] + [
        p for c in body.get("contents") or [] for p in c.get("parts") or []
    ]
    return "\n".join(str(p.get("text", "")) for p in parts if isinstance(p, dict) and "text" in p)


UNTRUSTED = ("<untrusted_context>\n", "\n</untrusted_context>")


def tool_results(body: dict[str, Any]) -> list[str]:
    """Every functionResponse's output as the model reads it, without the CLI's <untrusted_context> wrapper."""
    found = []
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if response:
                payload = response.get("response") or {}
                value = payload.get("output", payload.get("error", json.dumps(payload)))
                value = str(value)
                if value.startswith(UNTRUSTED[0]) and value.endswith(UNTRUSTED[1]):
                    value = value[len(UNTRUSTED[0]) : -len(UNTRUSTED[1])]
                found.append(value)
    return found
