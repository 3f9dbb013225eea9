"""The SQLite store, the zero-setup default: one file, WAL, numbered forward-only migrations.

Only this package imports aiosqlite and writes SQLite's SQL; it implements `ctxkeep.storage.interface`.
"""

from ctxkeep.storage.sqlite.db import SqliteStore

__all__ = ["SqliteStore"]
