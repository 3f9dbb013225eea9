"""The loopback model-API mocks the e2e harness uses: they answer from the script, resolve tool names, record requests."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from tests.e2e import mock_anthropic, mock_gemini, mock_openai
from tests.e2e.mock_api import call, text


def _post(url: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> str:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"content-type": "application/json", **(headers or {})}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


def _sse_data(stream: str) -> list[Any]:
    return [json.loads(line[len("data: ") :]) for line in stream.splitlines() if line.startswith("data: ")]


def test_the_anthropic_mock_streams_the_scripted_tool_use_under_the_advertised_name_and_strips_the_key() -> None:
    body = {
        "model": "m",
        "stream": True,
        "tools": [{"name": "mcp__ctxkeep__checkpoint_load"}],
        "messages": [{"role": "user", "content": "go"}],
    }
    with mock_anthropic.mock([call("checkpoint_load", {"task_id": "t"})]) as mock:
        events = _sse_data(_post(mock.url + "/v1/messages?beta=true", body, {"x-api-key": "secret"}))
        again = _sse_data(_post(mock.url + "/v1/messages", body))
    starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
    assert starts[0]["type"] == "tool_use" and starts[0]["name"] == "mcp__ctxkeep__checkpoint_load"
    assert json.loads(next(e for e in events if e["type"] == "content_block_delta")["delta"]["partial_json"]) == {
        "task_id": "t"
    }
    assert [e for e in again if e["type"] == "content_block_delta"][0]["delta"]["text"] == "done."
    assert [r.turn for r in mock.requests] == [0, None] and "x-api-key" not in mock.requests[0].headers


def test_the_anthropic_mock_answers_a_compaction_prompt_with_a_summary_without_using_a_turn() -> None:
    body = {
        "tools": [{"name": "Bash"}],
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": "Your task is to create a detailed summary of the conversation"}],
            }
        ],
    }
    with mock_anthropic.mock([text("scripted")]) as mock:
        reply = json.loads(_post(mock.url + "/v1/messages", body))
    assert "<summary>" in reply["content"][0]["text"] and mock.script.used == 0 and mock.requests[0].kind == "compact"


def test_the_anthropic_readers_find_the_tool_results_and_the_system_text() -> None:
    body = {
        "system": [{"type": "text", "text": "SYS"}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "R1"}]},
                    {"type": "tool_result", "tool_use_id": "b", "content": "R2"},
                ],
            },
            {"role": "system", "content": "MID"},
        ],
    }
    assert mock_anthropic.tool_results(body) == ["R1", "R2"]
    assert mock_anthropic.instructions_text(body) == "SYS\nMID"


def test_the_openai_mock_calls_a_namespaced_mcp_tool_and_tells_compaction_requests_apart() -> None:
    body = {
        "tools": [
            {
                "type": "namespace",
                "name": "mcp__ctxkeep",
                "description": "INSTR",
                "tools": [{"type": "function", "name": "checkpoint_save"}],
            }
        ],
        "input": [],
    }
    with mock_openai.mock([call("checkpoint_save", {"task_id": "t"})]) as mock:
        events = _sse_data(_post(mock.url + "/v1/responses", body))
        _post(mock.url + "/v1/responses", body, {"x-codex-turn-metadata": json.dumps({"request_kind": "compaction"})})
    item = next(e["item"] for e in events if e["type"] == "response.output_item.done")
    assert (item["type"], item["name"], item["namespace"], json.loads(item["arguments"])) == (
        "function_call",
        "checkpoint_save",
        "mcp__ctxkeep",
        {"task_id": "t"},
    )
    assert [r.kind for r in mock.requests] == ["main", "compact"] and mock.script.used == 1
    assert mock_openai.tools(body)[0]["name"] == "checkpoint_save" and "INSTR" in mock_openai.instructions_text(body)


def test_the_openai_reader_drops_codex_wall_time_line_from_both_output_shapes() -> None:
    body = {
        "input": [
            {"type": "function_call_output", "output": 'Wall time: 0.01 seconds\nOutput:\n{"a":1}'},
            {
                "type": "function_call_output",
                "output": [
                    {"type": "input_text", "text": "Wall time: 0.01 seconds\nOutput:"},
                    {"type": "input_text", "text": "# Brief"},
                ],
            },
        ]
    }
    assert mock_openai.tool_results(body) == ['{"a":1}', "# Brief"]


def test_the_gemini_mock_streams_a_function_call_and_answers_side_requests_with_json() -> None:
    body = {"tools": [{"functionDeclarations": [{"name": "mcp_ctxkeep_checkpoint_load"}]}], "contents": []}
    with mock_gemini.mock([call("checkpoint_load", {"task_id": "t"})]) as mock:
        chunks = _sse_data(_post(mock.url + "/v1beta/models/g:streamGenerateContent?alt=sse", body))
        side = json.loads(_post(mock.url + "/v1beta/models/g:generateContent", {"contents": []}))
    assert chunks[0]["candidates"][0]["content"]["parts"][0]["functionCall"] == {
        "name": "mcp_ctxkeep_checkpoint_load",
        "args": {"task_id": "t"},
    }
    assert json.loads(side["candidates"][0]["content"]["parts"][0]["text"])["next_speaker"] == "user"
    assert [r.kind for r in mock.requests] == ["main", "side"]


def test_the_gemini_reader_unwraps_the_untrusted_context_marker() -> None:
    body = {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "x",
                            "response": {"output": "<untrusted_context>\nTEXT\n</untrusted_context>"},
                        }
                    }
                ],
            }
        ]
    }
    assert mock_gemini.tool_results(body) == ["TEXT"]
