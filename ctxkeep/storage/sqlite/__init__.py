"""The SQLite store, the zero-setup default: one file, WAL, numbered forward-only migrations.

Only this package imports aiosqlite and writes SQLite's SQL; it implements `ctxkeep.storage.interface`. `SqliteStore`
is imported on first use: the hooks' fast path (`hook_session.py`) runs on the standard library's sqlite3 alone.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import Any

    from ctxkeep.storage.sqlite.db import SqliteStore

__all__ = ["SqliteStore"]


def __getattr__(name: str) -> Any:
    if name != "SqliteStore":
        raise AttributeError(f"module 'ctxkeep.storage.sqlite' has no attribute {name!r}")
    from ctxkeep.storage.sqlite.db import SqliteStore

    return SqliteStore
