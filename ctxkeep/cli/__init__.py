"""The `ctxkeep` command: serve, demo, doctor, install, hooks, and inspection of what is stored.

Calls tools and clients; only `serve` (and the demo's client) reach the MCP SDK and `ctxkeep.server`. The per-event
hooks (`ctxkeep hook <event>` for Claude Code, `ctxkeep hook <client> <event>` for the others) are dispatched before
anything else is imported: they run on every tool call.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

FAST_HOOKS = (
    "post-tool-use",
    "post-tool-use-failure",
    "user-prompt-submit",
    "stop",
    "session-start",
    "pre-compact",
    "post-compact",
)
# client -> the module whose run(event, stdin, stdout, env) maps its hooks onto the client core
CLIENT_HOOKS = {
    "claude-code": "ctxkeep.clients.claude_code.hooks.fast",
    "codex": "ctxkeep.clients.codex.hooks",
    "gemini": "ctxkeep.clients.gemini.hooks",
    "cursor": "ctxkeep.clients.cursor.hooks",
    "vscode": "ctxkeep.clients.vscode.hooks",
    "windsurf": "ctxkeep.clients.windsurf.hooks",
    "cline": "ctxkeep.clients.cline.hooks",
}


def main(argv: Sequence[str] | None = None) -> int:
    """The command line; `ctxkeep hook <event>` for Claude Code's per-event hooks takes the standard-library path."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) == 2 and args[0] == "hook" and args[1] in FAST_HOOKS:
        return _fast_hook(args[1])
    if len(args) == 3 and args[0] == "hook" and args[1] in CLIENT_HOOKS:
        return _client_hook(args[1], args[2])
    from ctxkeep.cli.main import main as full

    return full(args)


def _fast_hook(event: str) -> int:
    """A hook never fails the user, not even when ctxkeep itself cannot be imported (a broken install): exit 0."""
    try:
        from ctxkeep.clients.claude_code.hooks.fast import run
    except Exception as exc:
        try:
            from ctxkeep.clients.core.hook_io import write_log

            write_log(os.environ, f"{event} failed: ctxkeep cannot be imported: {type(exc).__name__}: {exc}")
        except Exception:
            pass
        return 0
    return run(event, sys.stdin.buffer, sys.stdout, os.environ)


def _client_hook(client: str, event: str) -> int:
    """Another client's hook event: the same guarantee (exit 0, one log line when ctxkeep cannot be imported)."""
    try:
        from importlib import import_module

        run = import_module(CLIENT_HOOKS[client]).run
    except Exception as exc:
        try:
            from ctxkeep.clients.core.hook_io import write_log

            write_log(os.environ, f"{client} {event} failed: ctxkeep cannot be imported: {type(exc).__name__}: {exc}")
        except Exception:
            pass
        return 0
    return int(run(event, sys.stdin.buffer, sys.stdout, os.environ))


__all__ = ["CLIENT_HOOKS", "FAST_HOOKS", "main"]
