"""Hostile bytes on the stdio stream: garbage lines are answered (id null) and the next request answered; a request over the size
limit is refused with an error naming the limit, and the server's memory stays bounded while it streams past."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.db_dump import query
from tests.raw_stdio import RawServer

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="reads /proc for the memory peak")]
MiB = 1024 * 1024


def test_garbage_lines_are_answered_with_id_null_and_the_next_request_is_answered(db_path: Path) -> None:
    server = RawServer(db_path)
    try:
        for garbage in (b"not json\n", b"{\n", b"[1, 2]\n", b'{"jsonrpc": "2.0"}\n', b"\xff\xfe\x00\n"):
            [reply] = server.replies_to(garbage)
            assert reply["id"] is None and reply["error"]["code"] in (-32700, -32600), (garbage, reply)
        assert server.replies_to(b"\n") == []  # a blank line is not a request
        server.write(b'{"jsonrpc": "2.0", "id": 99, "method": "no/such/method"}\n')
        unknown = server.answer(99)
        assert unknown["error"]["code"] == -32601  # method not found: an answer, not a crash
        listed = server.call(1, "checkpoint_list", {})
        assert listed["result"]["structuredContent"]["tasks"] == []
    finally:
        server.close()


def test_a_request_over_the_limit_is_refused_with_bounded_memory(db_path: Path) -> None:
    server = RawServer(db_path, CTXKEEP_MAX_REQUEST_BYTES=str(8 * MiB))
    try:
        # the peak is read before anything is stored: a stored MiB's own peak (JSON, redaction, the row) would hide it
        before = server.memory("VmHWM")
        head = b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "evidence_put", "arguments": {"content": "'
        server.write(head)
        for _ in range(100):  # 100 MB of content, streamed
            server.write(b"a" * MiB)
        server.write(b'"}}}\n')
        refused = server.answer(2)
        assert refused["error"]["message"].startswith(
            f"request of {len(head) + 100 * MiB + 5:,} bytes is over the {8 * MiB:,}-byte limit"
        )
        assert "Traceback" not in json.dumps(refused)
        assert server.memory("VmHWM") - before < 48 * MiB, "the oversize request was not held in memory"
        fits = server.call(3, "evidence_put", {"content": "x" * MiB})  # still serving; well under the limit: stored
        assert fits["result"]["structuredContent"]["bytes"] == MiB
    finally:
        server.close()
    assert query(db_path, "SELECT count(*) FROM evidence") == [(1,)]  # only the request that fitted


@pytest.mark.parametrize("nested_id_first", [False, True])
def test_an_oversize_request_is_answered_at_its_top_level_id_even_when_the_id_comes_last(
    db_path: Path, nested_id_first: bool
) -> None:
    """The TypeScript SDK writes `id` after `params`; a nested "id" inside the arguments must not take the answer."""
    server = RawServer(db_path, CTXKEEP_MAX_REQUEST_BYTES=str(64 * 1024))
    try:
        nested = '"id": "nested-7", ' if nested_id_first else ""
        content = 'a\\"{[' * 40_000  # escapes and brackets inside the string must not confuse the scan
        line = (
            '{"jsonrpc": "2.0", "method": "tools/call", "params": {"name": "evidence_put", "arguments": {'
            + nested
            + '"content": "'
            + content
            + '", "meta": [{"id": 3}]}}, "id": 77}\n'
        ).encode()
        replies = server.replies_to(line)
        assert [(reply["id"], reply["error"]["code"]) for reply in replies] == [(77, -32600)], replies
        assert f"over the {64 * 1024:,}-byte limit" in replies[0]["error"]["message"]
        assert server.call(78, "checkpoint_list", {})["result"]["structuredContent"]["tasks"] == []
    finally:
        server.close()
