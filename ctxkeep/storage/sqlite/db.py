"""The SQLite store: one aiosqlite connection to one SQLite file, its pragmas, migrations and transactions.

The file is created 0600 (folders 0700) and opened in WAL mode with busy_timeout, foreign keys and secure_delete on.
Writes run in `BEGIN IMMEDIATE` transactions (`Store.transaction()`): they commit whole or roll back, so a killed
process leaves the previous state intact, and two processes on the same file serialize instead of interleaving.
Before each commit the path must still name the file that was opened: a write to a deleted or replaced file would be
acknowledged and then lost, so it is refused. A file that cannot be written is opened read-only (reads work, writes
get one error naming what is read-only); another program's SQLite file is refused before anything is written to it.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import aiosqlite
import anyio

from ctxkeep.errors import DatabaseUnavailable
from ctxkeep.db_location import DEFAULT_DB_TIMEOUT_MS
from ctxkeep.storage.interface import Store
from ctxkeep.storage.sqlite import schema
from ctxkeep.storage.sql.digests import Cursors, Digests
from ctxkeep.storage.sql.inbox import Inbox
from ctxkeep.storage.sql.journal import Journal
from ctxkeep.storage.sql.leases import Leases, Tokens
from ctxkeep.storage.sql.sessions import Sessions
from ctxkeep.storage.sqlite.evidence import Evidence
from ctxkeep.storage.sqlite.files import Access, identity, moved, prepare, read_only, unavailable
from ctxkeep.storage.sqlite.index import TermKey
from ctxkeep.storage.sqlite.maintenance import WAL, Maintenance, clear_truncation, merge_owed, owed
from ctxkeep.storage.sqlite.memories import Memories
from ctxkeep.storage.sqlite.migrations import LATEST
from ctxkeep.storage.sqlite.opener import open_database
from ctxkeep.storage.sqlite.reader import Connection, LoopConnection, ReadConnection
from ctxkeep.storage.sqlite.statements import SqliteDb
from ctxkeep.storage.sqlite.tables import Checkpoints, Stats, WorkingSets

logger = logging.getLogger("ctxkeep")


def _casefold(text: Any) -> Any:
    return text.casefold() if isinstance(text, str) else text


class SqliteTx:
    """The queries available inside one transaction (or one read), over one connection."""

    def __init__(self, conn: Connection, key: TermKey) -> None:
        db = SqliteDb(conn)
        self.maintenance = Maintenance(conn)
        self.checkpoints = Checkpoints(db)
        self.evidence = Evidence(conn, key, self.maintenance)
        self.digests = Digests(db)
        self.cursors = Cursors(db)
        self.working_sets = WorkingSets(db)
        self.memories = Memories(conn, key, self.maintenance)
        self.journal = Journal(db)
        self.sessions = Sessions(db)
        self.stats = Stats(db)
        self.inbox = Inbox(db)
        self.leases = Leases(db)
        self.tokens = Tokens(db)


# The files this process has open as stores, by (device, inode): how many stores, and what opening the first found.
# POSIX locks belong to the process, and closing any descriptor of a file drops all of them, so a second store on a
# file must not open and close it to probe it (`prepare`): another process could then take itself for the file's last
# user and reset the WAL under this process's connections.
_OPEN: dict[tuple[int, int], tuple[int, Access]] = {}


class SqliteStore(Store):
    """An open ctxkeep SQLite file. Open with `await SqliteStore.open(path)`; close with `await store.close()`."""

    def __init__(self, conn: aiosqlite.Connection, path: Path, access: Access, busy_timeout_ms: int) -> None:
        self._conn = conn
        self._lock = anyio.Lock()
        self.path = path
        self.location = str(path)
        self.access = access
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._opened = identity(path)
        self._key = TermKey(b"")
        self._owed = False  # work a delete left owed is recorded in the file (finished after the next write)
        self._finishing = False
        self._reader: ReadConnection | None = None
        self._writer: LoopConnection | None = None
        self._read_lock = anyio.Lock()

    @classmethod
    async def open(
        cls, location: Path | str, busy_timeout_ms: int = 5_000, timeout_ms: int = DEFAULT_DB_TIMEOUT_MS
    ) -> SqliteStore:
        """Open (creating 0600 when absent), check it is ctxkeep's, migrate (`opener.open_database`, on the
        connection's own thread); raises SchemaTooNew or DatabaseUnavailable. A file that cannot be written opens
        read-only (then it must already be at the current schema). `timeout_ms` is PostgreSQL's: waits on the file
        are bounded by `busy_timeout_ms`."""
        path = Path(location)
        existed = path.exists()
        try:
            known = _OPEN.get(identity(path) or (-1, -1))
            # already open in this process: no probe, whose close() would drop the process's locks on the file
            access = known[1] if known else prepare(path)
        except OSError as exc:
            raise DatabaseUnavailable(f"database {path}: cannot open: {exc}") from exc
        try:
            conn = await _connect(path, busy_timeout_ms, access.writable)
        except OSError as exc:
            raise DatabaseUnavailable(f"database {path}: cannot open: {exc}") from exc
        except sqlite3.Error as exc:
            raise unavailable(path, exc) from exc
        store = cls(conn, path, access, busy_timeout_ms)
        store.created = not existed
        try:
            await store._start()
        except sqlite3.Error as exc:
            await conn.close()
            raise unavailable(path, exc) from exc
        except BaseException:
            await conn.close()
            raise
        if store._opened is not None:
            count, _ = _OPEN.get(store._opened, (0, access))
            _OPEN[store._opened] = (count + 1, access)
        return store

    async def _start(self) -> None:
        await self._conn.create_function("ctxkeep_casefold", 1, _casefold, deterministic=True)
        if not self.access.writable:
            await self._check_read_only_schema()
            return
        self._key = await schema.finish_index(self._conn, self.write)
        self._owed = bool(await owed(self._conn))
        if self._owed:
            await self._finish_owed(wait=False)

    async def _check_read_only_schema(self) -> None:
        applied = await schema.schema_version(self._conn)  # not newer than this ctxkeep (the opener checked)
        key = await schema.term_key(self._conn) if applied == LATEST else None
        if key is None:
            raise DatabaseUnavailable(
                f"database {self.path}: {self.access.what} is read-only ({self.access.reason}), and the file was written by "
                f"an older ctxkeep (schema {applied}, this one needs {LATEST}); it must be upgraded once with write access: "
                f"{self.access.fix}, then run any ctxkeep command"
            )
        self._key = key

    async def close(self) -> None:
        await self._conn.close()
        for local in (self._reader, self._writer):
            if local is not None:
                local.close()
        self._reader = self._writer = None
        if self._opened is not None and self._opened in _OPEN:
            count, access = _OPEN[self._opened]
            if count > 1:
                _OPEN[self._opened] = (count - 1, access)
            else:
                del _OPEN[self._opened]

    async def schema_version(self) -> int:
        """The newest migration applied to this file."""
        return await schema.schema_version(self._conn)

    async def checkpoint_wal(self) -> bool:
        """Finish what deletes left owed: merge the index tables they touched, copy the WAL into the database file and
        truncate it. False when a reader of another process kept the WAL from being truncated (waiting busy_timeout
        for it) or a merge could not run; what is left stays owed and is finished after the next write or open."""
        return await self._finish_owed(wait=True)

    async def _finish_owed(self, wait: bool) -> bool:
        """Merge the owed index tables and truncate the WAL; never raises (the writes before it stand either way)."""
        if not self.access.writable or self._finishing:
            return False
        self._finishing = True
        try:
            async with self.write() as conn:
                names = await owed(conn)
                await merge_owed(conn, names)
            truncated = await self._truncate(wait)
            if truncated and WAL in names:
                async with self.write() as conn:
                    await clear_truncation(conn)
                await self._truncate(wait=False)  # the WAL now holds only that last page
            self._owed = not truncated
            return truncated
        except DatabaseUnavailable as exc:  # a full disk, the file moved: what is owed stays recorded
            logger.warning("ctxkeep could not finish what a delete left owed (it stays owed): %s", exc)
            self._owed = True
            return False
        finally:
            self._finishing = False

    async def _truncate(self, wait: bool) -> bool:
        async with self._lock:
            if not wait:
                await self._conn.execute("PRAGMA busy_timeout = 0")
            try:
                cursor = await self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                row = await cursor.fetchone()
            except sqlite3.Error:
                row = None  # busy in another way: still owed
            finally:
                if not wait:
                    await self._conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout_ms}")
        return row is not None and int(row[0]) == 0

    def read_only(self) -> str | None:
        return None if self.access.writable else str(read_only(self.path, self.access))

    async def integrity_check(self) -> str:
        """`PRAGMA integrity_check`'s verdict: 'ok' when the file is sound."""
        cursor = await self._conn.execute("PRAGMA integrity_check")
        rows = await cursor.fetchall()
        return "\n".join(str(row[0]) for row in rows)

    def _check_same_file(self) -> None:
        if self._opened is not None:
            refused = moved(self.path, self._opened)
            if refused is not None:
                raise refused

    async def _empty_the_wal_at_the_path(self) -> None:
        """After the file was deleted or replaced: the -wal at the path still holds this file's pages, which SQLite
        would apply to the next file opened there; copy them into the old file and empty it (best effort)."""
        try:
            await self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        except sqlite3.Error:
            pass  # the refusal says what matters

    @asynccontextmanager
    async def _transaction(self, here: bool) -> AsyncIterator[Connection]:
        """BEGIN IMMEDIATE … COMMIT, or ROLLBACK and re-raise; shielded from cancellation at both ends (reads take a
        snapshot on their own connection instead).

        With `here`, the statements run on the loop's thread when the write lock is free at once; else (and for
        maintenance, which can take long) on aiosqlite's thread, which waits for the lock (see `reader.py`). A
        cancelled await would not stop a statement on aiosqlite's thread, so BEGIN, COMMIT and ROLLBACK are awaited
        to the end, and the connection is never left inside a transaction. A write commits only while the path still
        names the file opened.
        """
        if not self.access.writable:
            raise read_only(self.path, self.access)
        async with self._lock:
            conn: Connection = self._conn
            try:
                with anyio.CancelScope(shield=True):
                    local = self._loop_writer() if here else None
                    if local is not None and local.begin_write():
                        conn = local
                    else:
                        await self._conn.execute("BEGIN IMMEDIATE")
                yield conn
                with anyio.CancelScope(shield=True):
                    self._check_same_file()
                    await _finish(conn, "COMMIT")
            except BaseException as exc:
                with anyio.CancelScope(shield=True):
                    try:
                        await _finish(conn, "ROLLBACK")
                    except sqlite3.Error:
                        pass  # the original error says more than a failed rollback
                    if (
                        isinstance(exc, DatabaseUnavailable)
                        and self._opened is not None
                        and identity(self.path) != self._opened
                    ):
                        await self._empty_the_wal_at_the_path()
                if isinstance(exc, sqlite3.Error):
                    raise unavailable(self.path, exc) from exc
                raise

    def _loop_writer(self) -> LoopConnection | None:
        """The write connection on the loop's thread (busy_timeout 0), opened on first use; None when it cannot be."""
        if self._writer is None:
            try:
                conn = open_database(self.path, 0, True, any_thread=True)
            except (OSError, sqlite3.Error, DatabaseUnavailable):
                return None
            conn.create_function("ctxkeep_casefold", 1, _casefold, deterministic=True)
            self._writer = LoopConnection(conn)
        return self._writer

    @asynccontextmanager
    async def write(self) -> AsyncIterator[aiosqlite.Connection]:
        """A BEGIN IMMEDIATE transaction on aiosqlite's thread (maintenance): commits on exit, rolls back and re-raises
        on error."""
        async with self._transaction(here=False) as conn:
            assert isinstance(conn, aiosqlite.Connection)
            yield conn

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[SqliteTx]:
        """A write transaction exposing the query objects; afterwards, work an earlier delete left owed is finished
        when no reader stands in the way (never waiting for one)."""
        async with self._transaction(here=True) as conn:
            tx = SqliteTx(conn, self._key)
            yield tx
        if tx.maintenance.owes:
            self._owed = True  # the caller finishes it (checkpoint_wal) right away
        elif self._owed:
            await self._finish_owed(wait=False)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[SqliteTx]:
        """A read transaction: every query inside sees the same committed state (on the reader connection, on this
        thread: see `reader.py`)."""
        async with self._read_lock:
            try:
                reader = self._open_reader()
                reader.begin()
                try:
                    yield SqliteTx(reader, self._key)
                finally:
                    reader.end()
            except sqlite3.Error as exc:
                raise unavailable(self.path, exc) from exc

    def _open_reader(self) -> ReadConnection:
        """The reader connection, opened by the one opener on first use (the file is already checked and migrated)."""
        if self._reader is None:
            conn = open_database(self.path, self._busy_timeout_ms, self.access.writable, any_thread=True)
            conn.create_function("ctxkeep_casefold", 1, _casefold, deterministic=True)
            self._reader = ReadConnection(conn)
        return self._reader


async def _finish(conn: Connection, statement: str) -> None:
    """COMMIT or ROLLBACK, only when a transaction is open (SQLite may already have rolled back)."""
    if conn.in_transaction:
        await conn.execute(statement)


async def _connect(path: Path, busy_timeout_ms: int, writable: bool) -> aiosqlite.Connection:
    """The aiosqlite connection, opened by the one opener (`opener.open_database`) as its connector, on its thread.
    A connector that raises leaves aiosqlite's thread to report its stop to an event loop that may be closed by then,
    so a failure is kept, the thread stopped, and the failure raised."""
    failed: list[BaseException] = []

    def connector() -> sqlite3.Connection:
        try:
            return open_database(path, busy_timeout_ms, writable)
        except BaseException as exc:  # raised below, once the thread has stopped
            failed.append(exc)
            return sqlite3.connect(":memory:")

    conn = await aiosqlite.Connection(connector, 64)
    if failed:
        await conn.close()
        raise failed[0]
    return conn
