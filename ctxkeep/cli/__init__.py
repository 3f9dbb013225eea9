"""The `ctxkeep` command: serve, demo, doctor, install, hooks, and inspection of what is stored.

Calls tools and clients; only `serve` (and the demo's client) reach the MCP SDK and `ctxkeep.server`. The per-event
hooks (`ctxkeep hook <event>` for Claude Code, `ctxkeep hook <client> <event>` for every client, and the detached
`ctxkeep hook <client> worker`) are dispatched before anything else is imported: they run on every tool call. So is
`ctxkeep serve` without flags, which every MCP client starts and then waits for.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

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


def dispatch_hook(client: str, event: str) -> int:
    """A client's hook event, or its detached worker (`worker`). A hook never fails the user, not even when ctxkeep
    itself cannot be imported (a broken install): exit 0, one log line."""
    from importlib import import_module

    row = BY_NAME[client]
    try:
        module = import_module(row.module("worker" if event == "worker" else "hooks"))
    except Exception as exc:
        try:
            from ctxkeep.clients.core.hook_io import log_for

            log_for(os.environ, f"{client} {event} failed: ctxkeep cannot be imported: {type(exc).__name__}: {exc}")
        except Exception:
            pass
        return 0
    if event == "worker":
        return int(module.run_worker(sys.stdin.buffer, os.environ))
    return int(module.run(event, sys.stdin.buffer, sys.stdout, os.environ))


__all__ = ["dispatch_hook", "main"]
