"""The `ctxkeep` command: serve, demo, doctor, install, hooks, and inspection of what is stored.

Calls tools and clients; only `serve` (and the demo's client) reach the MCP SDK and `ctxkeep.server`. The per-event
hooks (`ctxkeep hook <event>` for Claude Code, `ctxkeep hook <client> <event>` for every client, and the detached
`ctxkeep hook <client> worker`) are dispatched before anything else is imported: they run on every tool call. So is
`ctxkeep serve` without flags, which every MCP client starts and then waits for.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ctxkeep.cli.hook_dispatch import dispatch_hook
from ctxkeep.clients.table import BY_NAME, CLAUDE_CODE_EVENTS


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; `ctxkeep hook …` takes the standard-library path."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 2 and args[0] == "hook" and args[1] in CLAUDE_CODE_EVENTS:
        return dispatch_hook("claude-code", args[1])
    if len(args) == 3 and args[0] == "hook" and args[1] in BY_NAME:
        return dispatch_hook(args[1], args[2])
    if args == ["serve"]:  # how an MCP client starts the server: no parser, no other command imported
        from ctxkeep.cli.serving import serve_stdio_command

        return serve_stdio_command()
    from ctxkeep.cli.main import main as full

    return full(args)


__all__ = ["main"]
