"""Which store a database location opens: a postgresql:// URL the PostgreSQL store, anything else the SQLite file.

The one place that knows both backends; the interface (`interface.py`) knows neither, and each backend knows only the
interface. A backend's driver is imported only when a location of its kind is opened.
"""

from __future__ import annotations

from pathlib import Path

from ctxkeep.errors import DatabaseUnavailable
from ctxkeep.db_location import shown_location
from ctxkeep.db_location import DEFAULT_DB_TIMEOUT_MS
from ctxkeep.storage.interface import Store, is_postgres


async def open_store(
    location: Path | str, busy_timeout_ms: int = 5_000, timeout_ms: int = DEFAULT_DB_TIMEOUT_MS
) -> Store:
    """Open (creating when absent) and migrate the store at `location`; close it with `await store.close()`.
    `busy_timeout_ms` bounds a wait for another writer; `timeout_ms` (PostgreSQL only) a statement, a wait for a
    pooled connection and a connection attempt. Raises SchemaTooNew or DatabaseUnavailable (also for a PostgreSQL URL
    when its driver, the `postgres` extra, is not installed)."""
    if is_postgres(location):
        try:
            from ctxkeep.storage.postgres.db import PostgresStore
        except ModuleNotFoundError as exc:
            if exc.name != "asyncpg":
                raise
            raise DatabaseUnavailable(
                f"database {shown_location(location)} is a PostgreSQL URL, and PostgreSQL needs the asyncpg driver, "
                "which is not installed: pip install 'ctxkeep[postgres]' (SQLite needs nothing more: point "
                "CTXKEEP_DB at a file)"
            ) from None
        return await PostgresStore.open(str(location), busy_timeout_ms, timeout_ms)
    from ctxkeep.storage.sqlite.db import SqliteStore

    return await SqliteStore.open(Path(location), busy_timeout_ms)
