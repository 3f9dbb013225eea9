"""The PostgreSQL store, for teams: `CTXKEEP_DB=postgresql://…` shares one database between machines and servers.

Only this package imports asyncpg and writes PostgreSQL's SQL; it implements `ctxkeep.storage.interface` with the same
numbered migrations (its own SQL, the same numbers and meaning) and the same search: the keyed terms of
`ctxkeep.storage.index_terms`, ranked by the BM25 FTS5 computes, over a postings table. `PostgresStore` is imported on first
use, so nothing loads asyncpg unless a PostgreSQL URL is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxkeep.storage.postgres.db import PostgresStore

__all__ = ["PostgresStore"]


def __getattr__(name: str) -> Any:
    if name != "PostgresStore":
        raise AttributeError(f"module 'ctxkeep.storage.postgres' has no attribute {name!r}")
    from ctxkeep.storage.postgres.db import PostgresStore

    return PostgresStore
