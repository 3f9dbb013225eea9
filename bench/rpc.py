"""A minimal JSON-RPC client for `ctxkeep serve` over stdio: one line out, one line back.

Benchmarks use it so that the figures measure the server and the pipe, not the Python SDK
client's own result validation (which a Claude Code client does not run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import TracebackType
from typing import Any

PROTOCOL = "2025-06-18"


class RawServer:
    """`ctxkeep serve` as a subprocess, initialized and ready for tools/call requests."""

    def __init__(self, db: Path, project: str) -> None:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "ctxkeep", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={**os.environ, "CTXKEEP_DB": str(db), "CTXKEEP_PROJECT": project},
        )
        self._next_id = 0
        self.request(
            "initialize",
            {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
        )
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        assert self._proc.stdin is not None
        self._proc.stdin.write(json.dumps(message).encode() + b"\n")
        self._proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        assert self._proc.stdout is not None
        while True:
            message = json.loads(self._proc.stdout.readline())
            if message.get("id") == self._next_id:
                return message

    def call_tool(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The tool's result; raises RuntimeError when the tool reported an error."""
        result = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        if result.get("isError"):
            raise RuntimeError(result["content"][0]["text"])
        return result

    def __enter__(self) -> RawServer:
        return self

    def __exit__(self, *exc: object | TracebackType) -> None:
        self._proc.kill()
        self._proc.wait()
