"""`ctxkeep serve` driven with raw bytes on its stdin, for tests of what goes over the wire."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}},
}

# a session's first call: the server opens its database then (or soon after start), not for the handshake
FIRST_CALL = "".join(
    json.dumps(message) + "\n"
    for message in (
        INITIALIZE,
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "checkpoint_list", "arguments": {}}},
    )
)


class RawServer:
    """A `ctxkeep serve` subprocess; `initialize=False` leaves the handshake to the test; `log` keeps its stderr."""

    def __init__(self, db_path: Path, initialize: bool = True, log: Path | None = None, **env: str) -> None:
        with open(log or os.devnull, "wb") as stderr:  # the server's log, when the test reads it
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "ctxkeep", "serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env={**os.environ, "CTXKEEP_DB": str(db_path), "CTXKEEP_PROJECT": "/hostile", **env},
            )
        self.sentinels = 0
        if initialize:
            self.send(INITIALIZE)
            assert self.answer(0)["result"]["serverInfo"]["name"] == "ctxkeep"
            self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def write(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, message: dict[str, Any]) -> None:
        self.write(json.dumps(message).encode() + b"\n")

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the server closed its output"
        return dict(json.loads(line))

    def answer(self, request_id: Any) -> dict[str, Any]:
        """The next message for `request_id` (messages for other ids are skipped)."""
        while True:
            message = self.read()
            if message.get("id") == request_id:
                return message

    def replies_to(self, data: bytes) -> list[dict[str, Any]]:
        """Every message the server writes after `data`, up to the answer to a ping sent after it."""
        self.sentinels += 1
        sentinel = f"sentinel-{self.sentinels}"
        self.write(data)
        self.send({"jsonrpc": "2.0", "id": sentinel, "method": "ping"})
        replies = []
        while (message := self.read()).get("id") != sentinel:
            replies.append(message)
        return replies

    def call(self, request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        self.send(
            {
                "jsonrpc": "2.0",
                "id": request_id,
                "method": "tools/call",
                "params": {"name": tool, "arguments": arguments},
            }
        )
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
