"""The SQLite store's statements run where they are asked: connections on the event loop's thread, with the part of
aiosqlite's connection API the query modules use.

A working set makes ~45 queries in one snapshot. Through aiosqlite each is a hand-off to its thread and back
(~70 µs on the benchmark machine, ~0.5 ms when that thread's core was idle), more than most of these queries take.
In WAL mode a reader does not wait for writers, so a read transaction can run on the event loop's thread without the
loop waiting on a lock another process holds. A write runs here too when it can take the file's write lock at once
(`busy_timeout` 0 on this connection: once BEGIN IMMEDIATE holds the lock, no statement of the transaction waits in WAL
mode); when another process holds it, the write goes to aiosqlite's thread, where the busy file is waited out without
blocking the loop. A statement blocks the loop for as long as it takes (a working set's ranking query at 10,000
records: a few milliseconds).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any, TypeAlias

import aiosqlite


class ReadCursor:
    """A statement's rows, fetched as aiosqlite's cursor hands them out (awaitable), without a thread hand-off."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor
        self.rowcount = cursor.rowcount
        self.lastrowid = cursor.lastrowid

    async def fetchall(self) -> list[Any]:
        return self._cursor.fetchall()

    async def fetchone(self) -> Any:
        return self._cursor.fetchone()


class LoopConnection:
    """One sqlite3 connection used on the event loop's thread, through aiosqlite's awaitable API. Its user serializes
    its use (the store's read lock or write lock)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    @property
    def in_transaction(self) -> bool:
        return self._conn.in_transaction

    async def execute(self, sql: str, parameters: Sequence[Any] | dict[str, Any] = ()) -> ReadCursor:
        return ReadCursor(self._conn.execute(sql, parameters))

    async def executemany(self, sql: str, parameters: Iterable[Sequence[Any]]) -> ReadCursor:
        return ReadCursor(self._conn.executemany(sql, parameters))

    def begin(self) -> None:
        self._conn.execute("BEGIN")

    def begin_write(self) -> bool:
        """BEGIN IMMEDIATE when the file's write lock is free now (the connection's busy_timeout is 0); False when
        another connection holds it, or the file cannot be written through this connection."""
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error:
            return False
        return True

    def end(self) -> None:
        """Ends the read transaction when one is open (SQLite may have ended it on an error)."""
        if self._conn.in_transaction:
            self._conn.execute("COMMIT")

    def close(self) -> None:
        self._conn.close()


class ReadConnection(LoopConnection):
    """The connection for read transactions only (`query_only`: a write through it is an error, never a write outside
    the store's write transactions)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA query_only = ON")
        super().__init__(conn)


# what the query modules run on: the store's aiosqlite connection (writes that had to wait, maintenance) or a
# connection on the loop's thread (snapshots, writes that took the lock at once)
Connection: TypeAlias = aiosqlite.Connection | LoopConnection
