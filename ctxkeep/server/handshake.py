"""A request before `initialize` is told "not initialized", and what to send first.

The SDK refuses it with "Invalid request parameters" (-32602), which sends a client looking for a fault in its
params. The gate itself stays the SDK's: this middleware only rewords its refusal while the connection has not
accepted `initialize`. An unknown method is still "Method not found", and `ping` still works before the handshake.
"""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, INVALID_REQUEST


def _initialized(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether the connection has accepted `initialize` (the session keeps its connection private; unknown: True)."""
    connection = getattr(ctx.session, "_connection", None)
    return bool(getattr(connection, "initialize_accepted", True))


class NotInitialized:
    """Server middleware: the SDK's pre-initialize refusal, reworded."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        try:
            return await call_next(ctx)
        except MCPError as exc:
            if exc.error.code != INVALID_PARAMS or _initialized(ctx):
                raise
            raise MCPError(
                code=INVALID_REQUEST,
                message=f"not initialized: send initialize, then notifications/initialized, before {ctx.method}",
            ) from exc


def guard_handshake(server: MCPServer[Any]) -> None:
    """Add the middleware to `server` (once)."""
    middleware = server._lowlevel_server.middleware
    if not any(isinstance(entry, NotInitialized) for entry in middleware):
        middleware.append(NotInitialized())
