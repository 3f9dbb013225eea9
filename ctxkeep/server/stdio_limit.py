"""The stdio transport in front of the SDK's: a size limit per request, and exactly one answer for every request.

The SDK reads each JSON-RPC line whole, however long (a 100 MB line costs 100 MB and more), and drops a line it
cannot validate without answering it. Here stdin is read in chunks and each line is scanned as it arrives
(`jsonrpc_scan`): a line over the limit is read past (memory stays bounded by the limit) and answered with an error
naming the limit, at the top-level id found by the scan, even when it comes after `params`. A line within the limit
is checked (`jsonrpc_check`): one valid JSON-RPC message goes to the SDK unchanged; anything else is answered here,
one error per request it holds, and the server keeps serving. Blank lines are skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp.types import JSONRPCError

from ctxkeep.server.handshake import guard_handshake
from ctxkeep.server.jsonrpc_check import check, oversize
from ctxkeep.server.jsonrpc_scan import Scan

CHUNK = 1 << 20

Reject = Callable[[list[JSONRPCError]], Awaitable[None]]


class _Line:
    """One line as it arrives: its pieces while it fits the limit (joined once, at its end), its size; past the limit,
    only its scan (which finds the id to answer)."""

    def __init__(self) -> None:
        self.pieces: list[bytes] = []
        self.size = 0
        self.scan: Scan | None = None

    def add(self, part: bytes, limit: int) -> None:
        self.size += len(part)
        if self.scan is None and self.size <= limit:
            self.pieces.append(part)
            return
        if self.scan is None:  # just went over the limit: scan what was kept, then keep nothing more
            self.scan = Scan()
            for piece in self.pieces:
                self.scan.feed(piece)
            self.pieces.clear()
        self.scan.feed(part)


class LimitedLines:
    """The valid JSON-RPC lines of a file descriptor as text, each at most `limit` bytes; the rest go to `on_reject`."""

    def __init__(self, fd: int, limit: int) -> None:
        self.fd, self.limit = fd, limit
        self.on_reject: Reject | None = None
        self._watchable = True

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _read(self) -> bytes:
        """The next chunk of input (b"" at its end). Waits in the event loop until the descriptor is readable, so
        Ctrl-C (which cancels the server) is never stuck behind a thread blocked in read() on a terminal or a pipe;
        a regular file (which the loop cannot watch, and which never blocks) is read in a worker thread."""
        if self._watchable:
            try:
                await anyio.wait_readable(self.fd)
            except (OSError, NotImplementedError):  # a regular file (epoll refuses it), or a loop without readers
                self._watchable = False
            else:
                return os.read(self.fd, CHUNK)
        return await anyio.to_thread.run_sync(os.read, self.fd, CHUNK)

    async def _lines(self) -> AsyncIterator[str]:
        line = _Line()
        while chunk := await self._read():
            start = 0
            while (end := chunk.find(b"\n", start)) >= 0:
                line.add(chunk[start : end + 1], self.limit)
                start = end + 1
                if (text := await self._finish(line)) is not None:
                    yield text
                line = _Line()
            if start < len(chunk):
                line.add(chunk[start:], self.limit)
        if line.size and (text := await self._finish(line)) is not None:  # a last line without its newline
            yield text

    async def _finish(self, line: _Line) -> str | None:
        """The line as text when it goes to the SDK; None when it was blank or answered here."""
        if line.scan is not None:
            await self._reject(oversize(line.scan, line.size, self.limit))
            return None
        data = b"".join(line.pieces)
        if not data.strip():
            return None
        errors = check(data.removesuffix(b"\n"))
        if errors:
            await self._reject(errors)
            return None
        return data.decode("utf-8")

    async def _reject(self, errors: list[JSONRPCError]) -> None:
        if self.on_reject is not None:
            await self.on_reject(errors)


def _is_text(value: object) -> bool:
    """Whether a value can be written as UTF-8 text (an id holding a lone surrogate cannot)."""
    if not isinstance(value, str):
        return True
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class _Escaped:
    """An answer whose id holds a lone surrogate: JSON can carry it (escaped, as the request sent it), UTF-8 cannot, so
    the SDK's serializer would fail and the request go unanswered. The SDK's writer asks a message only for its JSON."""

    def __init__(self, error: JSONRPCError) -> None:
        self.error = error

    def model_dump_json(self, **options: Any) -> str:
        return json.dumps(self.error.model_dump(mode="json", **options), separators=(",", ":"))


async def serve_stdio(server: MCPServer[Any], limit: int) -> None:
    """Run the server over stdin/stdout: requests over `limit` bytes are refused, every request is answered."""
    guard_handshake(server)
    lines = LimitedLines(0, limit)
    lowlevel = server._lowlevel_server  # the SDK's run_stdio_async does the same, with its unlimited reader
    async with stdio_server(stdin=lines) as (read_stream, write_stream):  # type: ignore[arg-type]

        async def answer(errors: list[JSONRPCError]) -> None:
            for error in errors:
                await write_stream.send(SessionMessage(error if _is_text(error.id) else _Escaped(error)))  # type: ignore[arg-type]

        lines.on_reject = answer
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
