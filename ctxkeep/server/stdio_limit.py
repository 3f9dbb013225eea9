"""The stdio transport with a size limit per request, in front of the SDK's.

The SDK reads each JSON-RPC line whole, however long: a 100 MB line costs 100 MB and more. Here
stdin is read in chunks; a line over the limit is skipped as it arrives (memory stays bounded by
the limit) and answered with an error naming the limit, sent for the request id found at its
start. Every other line goes to the SDK unchanged, so a garbage line is still the SDK's to drop.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import INVALID_REQUEST, ErrorData, JSONRPCError

CHUNK = 1 << 20
PREFIX = 4_096  # bytes kept of an oversize line, enough to find its id
_ID = re.compile(rb'"id"\s*:\s*("(?:[^"\\]|\\.){0,200}"|-?\d{1,18})')

Oversize = Callable[[bytes, int], Awaitable[None]]


class LimitedLines:
    """The lines of a file descriptor as text, each at most `limit` bytes; longer ones go to `on_oversize`."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd, self.limit = fd, limit
        self.on_oversize: Oversize | None = None

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        pieces: list[bytes] = []  # the current line so far (joined once, when it ends: no quadratic copying)
        size, skipping, prefix, skipped = 0, False, b"", 0
        while True:
            chunk = await anyio.to_thread.run_sync(os.read, self.fd, CHUNK)
            if not chunk:
                return
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                part, start = chunk[start:end + 1], end + 1
                if skipping:
                    skipping = False
                    await self._report(prefix, skipped + len(part))
                    continue
                line = b"".join([*pieces, part])
                pieces, size = [], 0
                if len(line) > self.limit:
                    await self._report(line[:PREFIX], len(line))
                else:
                    yield line.decode("utf-8", errors="replace")
            rest = chunk[start:]
            if skipping:
                skipped += len(rest)
            elif rest:
                pieces.append(rest)
                size += len(rest)
                if size > self.limit:  # a line already over the limit: stop keeping it
                    skipping, prefix, skipped = True, b"".join(pieces)[:PREFIX], size
                    pieces, size = [], 0

    async def _report(self, prefix: bytes, size: int) -> None:
        if self.on_oversize is not None:
            await self.on_oversize(prefix, size)


def too_large(prefix: bytes, size: int, limit: int) -> JSONRPCError | None:
    """The error answering an oversize request, when its id can be read from its start (None for a notification)."""
    found = _ID.search(prefix)
    if found is None:
        return None
    request_id = json.loads(found.group(1))
    message = (f"request of {size:,} bytes is over the {limit:,}-byte limit (CTXKEEP_MAX_REQUEST_BYTES); nothing was stored. "
               "Send large content in parts: several evidence_put calls, or a batch of at most 64 MiB")
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=INVALID_REQUEST, message=message))


async def serve_stdio(server: MCPServer[Any], limit: int) -> None:
    """Run the server over stdin/stdout, refusing requests over `limit` bytes."""
    lines = LimitedLines(0, limit)
    lowlevel = server._lowlevel_server  # the SDK's run_stdio_async does the same, with its unlimited reader
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]
        async def answer(prefix: bytes, size: int) -> None:
            error = too_large(prefix, size, limit)
            if error is not None:
                await write_stream.send(SessionMessage(error))

        lines.on_oversize = answer
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
