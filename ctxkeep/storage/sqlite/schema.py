"""What the Store finishes when it opens a file, after the opener (`opener.py`: the file checked, its pragmas, its
migrations): the index work migrations leave owed (the file's random term key, the re-index of stored text).

Every write here runs in its own transaction on the Store's connection (`write`), so a killed process leaves the
file at the last finished step; the next open carries on.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import aiosqlite

from ctxkeep.storage.sqlite.index import TermKey, rebuild
from ctxkeep.storage.sqlite.migrations import REBUILD_INDEX
from ctxkeep.storage.sqlite.opener import SCHEMA_VERSION

Write = Callable[[], AbstractAsyncContextManager[aiosqlite.Connection]]  # a write transaction on the connection


async def schema_version(conn: aiosqlite.Connection) -> int:
    """The newest migration applied to the file (0 for a file none was applied to, as a new one opened read-only)."""
    try:
        cursor = await conn.execute(SCHEMA_VERSION)
    except sqlite3.OperationalError:
        return 0  # no migrations table
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


async def term_key(conn: aiosqlite.Connection) -> TermKey | None:
    cursor = await conn.execute("SELECT value FROM store_meta WHERE name = 'term_key'")
    row = await cursor.fetchone()
    return TermKey(bytes.fromhex(row[0])) if row else None


async def finish_index(conn: aiosqlite.Connection, write: Write) -> TermKey:
    """The file's term key, made (32 random bytes) when the file has none, and the re-index a migration left owed
    (every stored record and memory indexed again from its text), in one transaction."""
    key = await term_key(conn)
    cursor = await conn.execute("SELECT 1 FROM store_meta WHERE name = ?", (REBUILD_INDEX,))
    if key is not None and await cursor.fetchone() is None:
        return key
    async with write() as tx:
        await tx.execute(
            "INSERT OR IGNORE INTO store_meta (name, value) VALUES ('term_key', ?)", (secrets.token_bytes(32).hex(),)
        )
        key = await term_key(tx)
        assert key is not None
        cursor = await tx.execute("DELETE FROM store_meta WHERE name = ?", (REBUILD_INDEX,))
        if cursor.rowcount:  # not done by another process while this one waited for the lock
            await rebuild(tx, key)
    return key
