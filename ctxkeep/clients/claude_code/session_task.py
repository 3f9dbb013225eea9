"""Moved to `ctxkeep.clients.core.session_task` (every client's worker builds its session task there)."""

from ctxkeep.clients.core.session_task import fit, merge_todos, session_state

__all__ = ["fit", "merge_todos", "session_state"]
