"""Every line on stdio that is not a valid JSON-RPC message gets exactly one error answer, carrying the request's id
when it can be read and `id: null` otherwise; the server keeps serving (raw bytes to a real `ctxkeep serve`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.raw_stdio import INITIALIZE, RawServer

pytestmark = pytest.mark.slow
PARSE_ERROR, INVALID_REQUEST = -32700, -32600


def _call(request_id: Any, arguments: str) -> bytes:
    """A tools/call line with `arguments` spliced in as raw JSON text."""
    return (
        b'{"jsonrpc": "2.0", "id": ' + json.dumps(request_id).encode() + b', "method": "tools/call", "params": '
        b'{"name": "checkpoint_load", "arguments": ' + arguments.encode() + b"}}"
    )


def _nested(levels: int) -> str:
    return '{"task_id": "t", "x": ' + "[" * levels + "]" * levels + "}"


# (what, the line, the answers it must get: (id, code) each)
CASES: list[tuple[str, bytes, list[tuple[Any, int]]]] = [
    ("a lone high surrogate escape in an argument", _call(101, r'{"task_id": "a\ud800b"}'), [(101, PARSE_ERROR)]),
    ("a lone low surrogate escape in a key", _call(102, r'{"task_id": "t", "\udc00": 1}'), [(102, PARSE_ERROR)]),
    # an id holding a lone surrogate escape is readable JSON: the answer carries it back, escaped as it came
    (
        "a lone surrogate escape in the id itself",
        rb'{"jsonrpc": "2.0", "id": "\ud800", "method": "ping"}',
        [("\ud800", PARSE_ERROR)],
    ),
    (
        "a lone low surrogate escape inside an id, on a tool call",
        rb'{"jsonrpc": "2.0", "id": "req-\udc00-7", "method": "tools/call", "params": {"name": "checkpoint_list"}}',
        [("req-\udc00-7", PARSE_ERROR)],
    ),
    (
        "a lone surrogate in the id and in the arguments",
        rb'{"jsonrpc": "2.0", "id": "x\ud83d", "method": "tools/call", "params": {"arguments": {"a": "\udfff"}}}',
        [("x\ud83d", PARSE_ERROR)],
    ),
    (
        "a lone surrogate id on a batch member",
        rb'[{"jsonrpc": "2.0", "id": "\udbff", "method": "ping"}, {"jsonrpc": "2.0", "id": 8, "method": "ping"}]',
        [("\udbff", INVALID_REQUEST), (8, INVALID_REQUEST)],
    ),
    ("arguments nested 250 levels deep", _call(103, _nested(250)), [(103, INVALID_REQUEST)]),
    ("arguments nested 100,000 levels deep", _call(104, _nested(100_000)), [(104, INVALID_REQUEST)]),
    (
        "an integer of 5,000 digits in an argument",
        _call(105, '{"task_id": "t", "n": ' + "7" * 5000 + "}"),
        [(105, INVALID_REQUEST)],
    ),
    (
        "an id of 5,000 digits",
        b'{"jsonrpc": "2.0", "id": ' + b"7" * 5000 + b', "method": "ping"}',
        [(None, INVALID_REQUEST)],
    ),
    ("jsonrpc missing", b'{"id": 106, "method": "tools/list"}', [(106, INVALID_REQUEST)]),
    ("jsonrpc 1.0", b'{"jsonrpc": "1.0", "id": 107, "method": "tools/list"}', [(107, INVALID_REQUEST)]),
    ("jsonrpc as a number", b'{"jsonrpc": 2.0, "id": 108, "method": "tools/list"}', [(108, INVALID_REQUEST)]),
    (
        "params as a list",
        b'{"jsonrpc": "2.0", "id": 109, "method": "tools/list", "params": []}',
        [(109, INVALID_REQUEST)],
    ),
    (
        "params as a string",
        b'{"jsonrpc": "2.0", "id": 110, "method": "tools/list", "params": "x"}',
        [(110, INVALID_REQUEST)],
    ),
    ("no method", b'{"jsonrpc": "2.0", "id": 111}', [(111, INVALID_REQUEST)]),
    ("a method that is not a string", b'{"jsonrpc": "2.0", "id": 112, "method": 5}', [(112, INVALID_REQUEST)]),
    ("an id that is a float", b'{"jsonrpc": "2.0", "id": 1.5, "method": "tools/list"}', [(None, INVALID_REQUEST)]),
    (
        "an id that is a whole float",
        b'{"jsonrpc": "2.0", "id": 113.0, "method": "tools/list"}',
        [(None, INVALID_REQUEST)],
    ),
    ("an id that is a bool", b'{"jsonrpc": "2.0", "id": true, "method": "tools/list"}', [(None, INVALID_REQUEST)]),
    ("an id that is null", b'{"jsonrpc": "2.0", "id": null, "method": "tools/list"}', [(None, INVALID_REQUEST)]),
    (
        "an id that is an object",
        b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "tools/list"}',
        [(None, INVALID_REQUEST)],
    ),
    ("an id that is a list", b'{"jsonrpc": "2.0", "id": [114], "method": "tools/list"}', [(None, INVALID_REQUEST)]),
    (
        "a batch of two requests",
        b'[{"jsonrpc": "2.0", "id": 115, "method": "tools/list"}, {"jsonrpc": "2.0", "id": 116, "method": "ping"}]',
        [(115, INVALID_REQUEST), (116, INVALID_REQUEST)],
    ),
    ("an empty batch", b"[]", [(None, INVALID_REQUEST)]),
    (
        "two objects on one line",
        b'{"jsonrpc": "2.0", "id": 117, "method": "tools/list"}{"jsonrpc": "2.0", "id": 118, "method": "ping"}',
        [(117, INVALID_REQUEST), (118, INVALID_REQUEST)],
    ),
    (
        "a request cut short",
        b'{"jsonrpc": "2.0", "id": 119, "method": "tools/call", "params": {"name": "checkpoint_load", "argu',
        [(119, PARSE_ERROR)],
    ),
    ("broken JSON inside the params", _call(120, '{"task_id": "t", "x": [1, 2,, 3]}'), [(120, PARSE_ERROR)]),
    (
        "bytes that are not UTF-8 in an argument",
        _call(121, '{"task_id": "t"}').replace(b'"t"', b'"t\xff\xfe"'),
        [(121, PARSE_ERROR)],
    ),
    (
        "a nested id before a top-level one that is broken",
        b'{"jsonrpc": "2.0", "params": {"id": 5}, "id": 1.5, "method": "ping"}',
        [(None, INVALID_REQUEST)],
    ),
    ("not JSON at all", b"not json", [(None, PARSE_ERROR)]),
    ("a JSON value that is not an object", b"42", [(None, INVALID_REQUEST)]),
    ("an object without jsonrpc or id", b'{"jsonrpc": "2.0"}', [(None, INVALID_REQUEST)]),
]


@pytest.fixture(scope="module")
def raw(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RawServer]:
    server = RawServer(tmp_path_factory.mktemp("jsonrpc") / "ctxkeep.db")
    yield server
    server.close()


@pytest.mark.parametrize(
    ("line", "expected"), [pytest.param(line, expected, id=what) for what, line, expected in CASES]
)
def test_each_malformed_request_gets_exactly_one_error_answer_and_the_server_keeps_serving(
    raw: RawServer, line: bytes, expected: list[tuple[Any, int]]
) -> None:
    replies = raw.replies_to(line + b"\n")
    assert [(reply.get("id"), reply.get("error", {}).get("code")) for reply in replies] == expected, replies
    for reply in replies:
        assert reply["jsonrpc"] == "2.0" and "id" in reply and "result" not in reply
        message = reply["error"]["message"]
        assert message and "Traceback" not in message and len(message) < 1_000
    listed = raw.call(900, "checkpoint_list", {})
    assert listed["result"]["structuredContent"]["tasks"] == []


def test_the_messages_say_what_was_wrong_and_what_to_send(raw: RawServer) -> None:
    def message(line: bytes) -> str:
        [reply] = raw.replies_to(line + b"\n")
        return str(reply["error"]["message"])

    assert "surrogate" in message(_call(201, r'{"task_id": "\ud800"}'))
    assert "100 levels" in message(_call(202, _nested(250)))
    assert "4,300 digits" in message(_call(203, '{"n": ' + "1" * 5000 + "}"))
    assert '"2.0"' in message(b'{"id": 204, "method": "ping"}')
    assert "object" in message(b'{"jsonrpc": "2.0", "id": 205, "method": "ping", "params": []}')
    assert "string or an integer" in message(b'{"jsonrpc": "2.0", "id": 2.5, "method": "ping"}')
    assert "one request per line" in message(b'[{"jsonrpc": "2.0", "id": 206, "method": "ping"}]')
    assert "one request per line" in message(
        b'{"jsonrpc": "2.0", "id": 207, "method": "ping"}{"jsonrpc": "2.0", "method": "x"}'
    ).replace("one JSON-RPC message per line", "one request per line")


def test_valid_messages_still_pass_surrogate_pairs_blank_lines_and_notifications(raw: RawServer) -> None:
    assert raw.replies_to(b"\n   \n") == []  # blank lines are framing, not requests
    assert (
        raw.replies_to(b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}\n') == []
    )
    saved = raw.call(
        300, "checkpoint_save", {"task_id": "pair", "state": {"goal": "emoji \U0001f600 kept", "next_action": "x"}}
    )
    assert saved["result"].get("isError") is not True, saved
    raw.write(_call(301, r'{"task_id": "pair"}') + b"\n")
    loaded = raw.answer(301)
    assert loaded["result"].get("isError") is not True and "emoji \U0001f600 kept" in json.dumps(
        loaded["result"], ensure_ascii=False
    )
    deep = raw.call(
        302,
        "checkpoint_save",
        {"task_id": "deep", "state": {"goal": "g", "next_action": "x", "extra": {"a": [[[[1]]]]}}},
    )
    assert deep["result"].get("isError") is not True, deep


def test_a_request_before_initialize_is_told_the_server_is_not_initialized(tmp_path: Path) -> None:
    server = RawServer(tmp_path / "ctxkeep.db", initialize=False)
    try:
        [early] = server.replies_to(b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list"}\n')
        assert early["id"] == 1 and "not initialized" in early["error"]["message"]
        assert "initialize" in early["error"]["message"].split("not initialized", 1)[1]  # and what to send first
        assert "Invalid request parameters" not in early["error"]["message"]
        [unknown] = server.replies_to(b'{"jsonrpc": "2.0", "id": 2, "method": "no/such/method"}\n')
        assert unknown["error"]["code"] == -32601  # an unknown method is still "method not found"
        server.send(INITIALIZE)
        assert server.answer(0)["result"]["serverInfo"]["name"] == "ctxkeep"
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        assert server.call(3, "checkpoint_list", {})["result"]["structuredContent"]["tasks"] == []
    finally:
        server.close()
