"""Which backend a database location names, from its text alone (the settings read it at start-up, before any store
module is imported)."""

from __future__ import annotations

from pathlib import Path

POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres(location: Path | str) -> bool:
    """Whether a database location names a PostgreSQL server (postgresql:// or postgres://)."""
    return isinstance(location, str) and location.startswith(POSTGRES_SCHEMES)
