"""The SQLite store: one aiosqlite connection to one SQLite file, its pragmas, migrations and transactions.

The file is created 0600 and opened in WAL mode with busy_timeout, foreign keys and
secure_delete on. Writes run in `BEGIN IMMEDIATE` transactions (`Store.write()`): they commit
whole or roll back, so a killed process leaves the previous state intact, and two processes
on the same file serialize instead of interleaving.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import aiosqlite
import anyio

from ctxkeep.errors import DatabaseUnavailable, SchemaTooNew
from ctxkeep.storage.interface import Store
from ctxkeep.storage.sqlite.checkpoints import Checkpoints
from ctxkeep.storage.sqlite.digests import Cursors, Digests
from ctxkeep.storage.sqlite.evidence import Evidence
from ctxkeep.storage.sqlite.journal import Journal
from ctxkeep.storage.sqlite.memories import Memories
from ctxkeep.storage.sqlite.migrations import LATEST, MIGRATIONS, statements
from ctxkeep.storage.sqlite.sessions import Sessions
from ctxkeep.storage.sqlite.stats import Stats
from ctxkeep.storage.sqlite.working_sets import WorkingSets


def _create_private(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
    os.close(fd)


def _unavailable(path: Path, exc: sqlite3.Error) -> DatabaseUnavailable:
    text = str(exc)
    if "locked" in text or "busy" in text:
        hint = "another process holds a write lock longer than busy_timeout; retry shortly"
    elif "full" in text:
        hint = "the disk is full; free space and retry (stored data is unchanged)"
    elif "not a database" in text or "malformed" in text:
        hint = "the file is not a valid ctxkeep database; restore it from backup or point CTXKEEP_DB elsewhere"
    else:
        hint = "check the file and its permissions"
    return DatabaseUnavailable(f"database {path}: {text}; {hint}")


class SqliteTx:
    """The queries available inside one transaction (or one read), over one connection."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self.checkpoints = Checkpoints(conn)
        self.evidence = Evidence(conn)
        self.digests = Digests(conn)
        self.cursors = Cursors(conn)
        self.working_sets = WorkingSets(conn)
        self.memories = Memories(conn)
        self.journal = Journal(conn)
        self.sessions = Sessions(conn)
        self.stats = Stats(conn)


class SqliteStore(Store):
    """An open ctxkeep SQLite file. Open with `await SqliteStore.open(path)`; close with `await store.close()`."""

    def __init__(self, conn: aiosqlite.Connection, path: Path) -> None:
        self._conn = conn
        self._lock = anyio.Lock()
        self.path = path

    @classmethod
    async def open(cls, path: Path, busy_timeout_ms: int = 5_000) -> SqliteStore:
        """Open (creating 0600 when absent) and migrate; raises SchemaTooNew or DatabaseUnavailable."""
        try:
            _create_private(path)
            conn = await aiosqlite.connect(path, isolation_level=None)
        except (OSError, sqlite3.Error) as exc:
            raise DatabaseUnavailable(f"database {path}: cannot open: {exc}") from exc
        store = cls(conn, path)
        try:
            await store._configure(busy_timeout_ms)
            await store._migrate()
        except BaseException:
            await conn.close()
            raise
        return store

    async def close(self) -> None:
        await self._conn.close()

    async def _configure(self, busy_timeout_ms: int) -> None:
        try:
            await self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            await self._conn.execute("PRAGMA journal_mode = WAL")
            for pragma in ("foreign_keys = ON", "secure_delete = ON", "synchronous = NORMAL"):
                await self._conn.execute(f"PRAGMA {pragma}")
        except sqlite3.Error as exc:
            raise _unavailable(self.path, exc) from exc

    async def _migrate(self) -> None:
        async with self.write() as conn:
            await conn.execute(
                "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
            )
        applied = await self.schema_version()
        if applied > LATEST:
            raise SchemaTooNew(
                f"database {self.path} has schema version {applied}, newer than this ctxkeep knows ({LATEST}); "
                "upgrade ctxkeep (pip install -U ctxkeep) or point CTXKEEP_DB at another file"
            )
        for version, name, sql in MIGRATIONS:
            if version > applied:
                await self._apply(version, name, sql)

    async def _apply(self, version: int, name: str, sql: str) -> None:
        async with self.write() as conn:
            cursor = await conn.execute("SELECT 1 FROM schema_migrations WHERE version = ?", (version,))
            if await cursor.fetchone():
                return  # another process applied it while we waited for the lock
            for statement in statements(sql):
                await conn.execute(statement)
            await conn.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", (version, name))

    async def schema_version(self) -> int:
        """The newest migration applied to this file."""
        cursor = await self._conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
        row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def checkpoint_wal(self) -> bool:
        """Copy the WAL into the database file and truncate it; False when a reader kept it from finishing."""
        async with self._lock:
            cursor = await self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            row = await cursor.fetchone()
        return row is not None and int(row[0]) == 0

    async def integrity_check(self) -> str:
        """`PRAGMA integrity_check`'s verdict: 'ok' when the file is sound."""
        cursor = await self._conn.execute("PRAGMA integrity_check")
        rows = await cursor.fetchall()
        return "\n".join(str(row[0]) for row in rows)

    async def _finish(self, statement: str) -> None:
        """COMMIT or ROLLBACK, only when a transaction is open (SQLite may already have rolled back)."""
        if self._conn.in_transaction:
            await self._conn.execute(statement)

    @asynccontextmanager
    async def _transaction(self, begin: str) -> AsyncIterator[aiosqlite.Connection]:
        """BEGIN … COMMIT, or ROLLBACK and re-raise; shielded from cancellation at both ends.

        The statements run on aiosqlite's thread: a cancelled await would not stop them, so
        BEGIN, COMMIT and ROLLBACK are awaited to the end, and the connection is never left
        inside a transaction.
        """
        async with self._lock:
            try:
                with anyio.CancelScope(shield=True):
                    await self._conn.execute(begin)
                yield self._conn
                with anyio.CancelScope(shield=True):
                    await self._finish("COMMIT")
            except BaseException as exc:
                with anyio.CancelScope(shield=True):
                    try:
                        await self._finish("ROLLBACK")
                    except sqlite3.Error:
                        pass  # the original error says more than a failed rollback
                if isinstance(exc, sqlite3.Error):
                    raise _unavailable(self.path, exc) from exc
                raise

    @asynccontextmanager
    async def write(self) -> AsyncIterator[aiosqlite.Connection]:
        """A BEGIN IMMEDIATE transaction: commits on exit, rolls back and re-raises on error."""
        async with self._transaction("BEGIN IMMEDIATE") as conn:
            yield conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteTx]:
        """A write transaction exposing the query objects."""
        async with self._transaction("BEGIN IMMEDIATE") as conn:
            yield SqliteTx(conn)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[SqliteTx]:
        """A read transaction: every query inside sees the same committed state."""
        async with self._transaction("BEGIN") as conn:
            yield SqliteTx(conn)
