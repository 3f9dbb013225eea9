"""The shared table modules' statements (`ctxkeep.storage.sql`) on the store's connection: SQLite takes their `?`
placeholders as they are."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


from ctxkeep.storage.sqlite.reader import Connection
from ctxkeep.storage.sql.db import Row


class SqliteDb:
    """`sql.db.Db` over one aiosqlite connection (inside a Store transaction or snapshot)."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn

    async def execute(self, sql: str, *args: Any) -> int:
        cursor = await self.conn.execute(sql, args)
        return cursor.rowcount

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        await self.conn.executemany(sql, rows)

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        cursor = await self.conn.execute(sql, args)
        return list(await cursor.fetchall())

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        cursor = await self.conn.execute(sql, args)
        row: Row | None = await cursor.fetchone()
        return row

    async def owe_vacuum(self, *tables: str) -> None:
        """Nothing: secure_delete zeroes the pages a delete frees as it frees them."""
