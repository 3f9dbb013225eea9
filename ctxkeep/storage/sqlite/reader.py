"""The SQLite store's reads, run where they are asked: a second connection for snapshots, with the part of
aiosqlite's connection API the query modules use.

A working set makes ~45 queries in one snapshot. Through aiosqlite each is a hand-off to its thread and back
(~70 µs on the benchmark machine), more than most of these queries take. In WAL mode a reader does not wait for
writers, so a read transaction can run on the event loop's thread without the loop waiting on a lock another process
holds; writes stay on aiosqlite's thread, where a busy file is waited out without blocking the loop. A read blocks
the loop for as long as its queries take (a working set's ranking query at 10,000 records: a few milliseconds).
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


class ReadConnection:
    """One sqlite3 connection for read transactions only (`query_only`: a write through it is an error, never a
    write outside the store's write transactions). Its user serializes its use (the store's read lock)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        conn.execute("PRAGMA query_only = ON")
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

    def end(self) -> None:
        """Ends the read transaction when one is open (SQLite may have ended it on an error)."""
        if self._conn.in_transaction:
            self._conn.execute("COMMIT")

    def close(self) -> None:
        self._conn.close()


# what the query modules run on: the store's aiosqlite connection (writes, maintenance) or its reader (snapshots)
Connection: TypeAlias = aiosqlite.Connection | ReadConnection
