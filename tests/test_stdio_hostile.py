"""Hostile bytes on the stdio stream: garbage lines are dropped and the next request answered; a request over the size
limit is refused with an error naming the limit, and the server's memory stays bounded while it streams past."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.skipif(sys.platform != "linux", reason="reads /proc for the memory peak")]
MiB = 1024 * 1024


class RawServer:
    """`ctxkeep serve` driven with raw bytes on its pipes."""

    def __init__(self, db_path: Path, **env: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "ctxkeep", "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, env={**os.environ, "CTXKEEP_DB": str(db_path), "CTXKEEP_PROJECT": "/hostile", **env})
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        assert self.answer(0)["result"]["serverInfo"]["name"] == "ctxkeep"
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.write(json.dumps(message).encode() + b"\n")

    def answer(self, request_id: int) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, "the server closed its output"
            message = json.loads(line)
            if message.get("id") == request_id:
                return dict(message)

    def call(self, request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
        return self.answer(request_id)

    def memory(self, field: str) -> int:
        """A /proc/<pid>/status figure in bytes (VmRSS now, VmHWM the peak)."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
        raise AssertionError(field)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def test_garbage_lines_are_dropped_and_the_next_request_is_answered(db_path: Path) -> None:
    server = RawServer(db_path)
    try:
        for garbage in (b"not json\n", b"{\n", b"[1, 2]\n", b'{"jsonrpc": "2.0"}\n', b"\xff\xfe\x00\n", b"\n",
                        b'{"jsonrpc": "2.0", "id": 99, "method": "no/such/method"}\n'):
            server.write(garbage)
        unknown = server.answer(99)
        assert unknown["error"]["code"] == -32601  # method not found: an answer, not a crash
        listed = server.call(1, "checkpoint_list", {})
        assert listed["result"]["structuredContent"] == {"tasks": []}
    finally:
        server.close()


def test_a_request_over_the_limit_is_refused_with_bounded_memory(db_path: Path) -> None:
    server = RawServer(db_path, CTXKEEP_MAX_REQUEST_BYTES=str(8 * MiB))
    try:
        fits = server.call(1, "evidence_put", {"content": "x" * MiB})  # well under the limit: stored
        assert fits["result"]["structuredContent"]["bytes"] == MiB
        before = server.memory("VmRSS")
        head = b'{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "evidence_put", "arguments": {"content": "'
        server.write(head)
        for _ in range(100):  # 100 MB of content, streamed
            server.write(b"a" * MiB)
        server.write(b'"}}}\n')
        refused = server.answer(2)
        assert refused["error"]["message"].startswith(f"request of {len(head) + 100 * MiB + 5:,} bytes is over the {8 * MiB:,}-byte limit")
        assert "Traceback" not in json.dumps(refused)
        assert server.memory("VmHWM") - before < 48 * MiB, "the oversize request was not held in memory"
        after = server.call(3, "checkpoint_list", {})  # still serving
        assert after["result"]["structuredContent"] == {"tasks": []}
    finally:
        server.close()
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM evidence").fetchone()[0] == 1  # only the request that fitted
