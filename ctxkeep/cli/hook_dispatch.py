"""`ctxkeep hook <client> <event>` and `ctxkeep hook <client> worker`: the client module that runs it, found in the
table of clients. Standard library only (it runs on every tool call)."""

from __future__ import annotations

import os
import sys

from ctxkeep.clients.table import BY_NAME


def dispatch_hook(client: str, event: str) -> int:
    """A client's hook event, or its detached worker (`worker`). A hook never fails the user, not even when ctxkeep
    itself cannot be imported (a broken install): exit 0, one log line."""
    name = BY_NAME[client].module("worker" if event == "worker" else "hooks")
    try:
        __import__(name)  # not importlib: its package costs a hook process warnings and more
        module = sys.modules[name]
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
