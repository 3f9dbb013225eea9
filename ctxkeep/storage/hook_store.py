"""The store the per-event hooks use: one session's records, hook state and offloaded outputs, on the standard library.

Hooks run as new processes on every tool call and prompt, so they cannot load the async Store (aiosqlite, asyncio,
pydantic). `open_session` opens the file directly (`sqlite/hook_session.py`); everything else goes through the `Store`. The
methods are those of `ctxkeep.storage.sqlite.hook_session.SqliteHotSession`; errors are the driver's (a hook logs them).
"""

from __future__ import annotations

import os

from ctxkeep.storage.sqlite.hook_session import InboxRow, RecordRow, SqliteHotSession, open_session

HotSession = SqliteHotSession

__all__ = ["HotSession", "InboxRow", "RecordRow", "open_hot_session"]


def open_hot_session(
    location: str | os.PathLike[str], project: str, session_id: str, busy_timeout_ms: int = 5_000
) -> HotSession:
    """One session of the database at `location` (created and migrated when needed); close it with `.close()`."""
    return open_session(location, project, session_id, busy_timeout_ms)
