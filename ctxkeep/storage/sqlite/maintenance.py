"""Work a delete leaves owed, recorded in the file inside the deleting transaction: merging the index tables it
touched (deleted entries linger in older FTS5 segments until merged) and truncating the WAL (old page images of the
deleted rows stay there until a checkpoint copies the zeroed pages back and resets it).

A reader of another process can keep the WAL from being reset, and a full disk can keep a merge from running; what is
owed stays recorded (so a crash or a restart does not lose it) and is finished at the next chance: the store's next
write, the next forget or delete, the next open of the file.
"""

from __future__ import annotations


from ctxkeep.storage.sqlite.reader import Connection
from ctxkeep.storage.sqlite.index import table_exists

WAL = "owed:truncate-wal"
MERGE = "owed:merge:"


class Maintenance:
    """The owed work of one transaction's connection; `owes` says this transaction added some."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self.owes = False

    async def owe_merge(self, quoted_table: str) -> None:
        """After this transaction: merge the table, then truncate the WAL."""
        await self._owe(MERGE + quoted_table.strip('"'))
        await self._owe(WAL)

    async def owe_truncation(self) -> None:
        await self._owe(WAL)

    async def _owe(self, name: str) -> None:
        await self._conn.execute("INSERT OR IGNORE INTO store_meta (name, value) VALUES (?, '1')", (name,))
        self.owes = True


async def owed(conn: Connection) -> list[str]:
    cursor = await conn.execute("SELECT name FROM store_meta WHERE name LIKE 'owed:%' ORDER BY name")
    return [row[0] for row in await cursor.fetchall()]


async def merge_owed(conn: Connection, names: list[str]) -> None:
    """Merge every table a delete left owed (inside a write transaction) and clear those debts."""
    for name in names:
        if name.startswith(MERGE):
            table = f'"{name.removeprefix(MERGE)}"'
            if await table_exists(conn, table):
                await conn.execute(f"INSERT INTO {table} ({table}) VALUES ('optimize')")
            await conn.execute("DELETE FROM store_meta WHERE name = ?", (name,))


async def clear_truncation(conn: Connection) -> None:
    await conn.execute("DELETE FROM store_meta WHERE name = ?", (WAL,))
