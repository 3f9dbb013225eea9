"""One transaction's connection, and the lock that makes PostgreSQL writes behave like SQLite's.

SQLite serializes writers (`BEGIN IMMEDIATE`), so a save reads the latest version and writes the next one with no other
writer in between. Here a write transaction takes a transaction-level advisory lock on each project it touches before
its first query of that project: writes to one project serialize (two saves of one task cannot both write version n+1,
an `expected_version` check sees every commit before it), writes to different projects run side by side. Locks go at
commit or rollback; waiting for one is bounded by lock_timeout (CTXKEEP_BUSY_TIMEOUT_MS).
"""

from __future__ import annotations

import hashlib
from typing import Any, TypeAlias

import asyncpg
from asyncpg.pool import PoolConnectionProxy

Conn: TypeAlias = "asyncpg.Connection[asyncpg.Record] | PoolConnectionProxy[asyncpg.Record]"

_LOCK_SPACE = b"ctxkeep project lock\n"


def project_lock(project: str) -> int:
    """The advisory lock id of a project: 63 bits of a hash (collisions only make two projects share a lock)."""
    return int.from_bytes(
        hashlib.blake2b(_LOCK_SPACE + project.encode("utf-8"), digest_size=8).digest(), "big", signed=True
    )


class Session:
    """The connection of one transaction (or snapshot); `of(project)` hands it out after locking the project."""

    def __init__(self, conn: Conn, writing: bool, project_ids: dict[str, int]) -> None:
        self.conn = conn
        self.writing = writing
        self._locked: set[str] = set()
        self._project_ids = project_ids  # the store's cache: a project's id never changes once made

    async def of(self, project: str) -> Conn:
        if self.writing and project not in self._locked:
            await self.conn.execute("SELECT pg_advisory_xact_lock($1)", project_lock(project))
            self._locked.add(project)
        return self.conn

    async def project_id(self, project: str, create: bool = False) -> int | None:
        """The project's id in the index tables; None when it never stored anything indexed (unless `create`)."""
        found = self._project_ids.get(project)
        if found is not None:
            return found
        conn = await self.of(project)
        value = await conn.fetchval("SELECT id FROM projects WHERE project = $1", project)
        if value is None and create:
            value = await conn.fetchval(
                "INSERT INTO projects (project) VALUES ($1) ON CONFLICT (project) DO UPDATE "
                "SET project = excluded.project RETURNING id",
                project,
            )
        if value is not None and not self.writing:
            self._project_ids[project] = int(value)
        return int(value) if value is not None else None


class Params:
    """Positional parameters of one statement: `add(value)` returns its placeholder ($1, $2, …)."""

    def __init__(self, *initial: Any) -> None:
        self.values: list[Any] = list(initial)

    def add(self, value: Any) -> str:
        self.values.append(value)
        return f"${len(self.values)}"
