"""What the Store checks and finishes when it opens a file: that the file is ctxkeep's, its migrations, and the
index work migrations leave owed (the file's random term key, the re-index of stored text).

Every write here runs in its own transaction on the Store's connection (`write`), so a killed process leaves the
file at the last finished step; the next open carries on.
"""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import aiosqlite

from ctxkeep.errors import DatabaseUnavailable, SchemaTooNew
from ctxkeep.storage.sqlite.index import TermKey, rebuild
from ctxkeep.storage.sqlite.migrations import (
    APPLICATION_ID,
    FIRST_MIGRATION,
    FOREIGN_KEYS_OFF,
    LATEST,
    MIGRATIONS,
    REBUILD_INDEX,
    statements,
)

Write = Callable[[], AbstractAsyncContextManager[aiosqlite.Connection]]  # a write transaction on the connection


async def check_ours(conn: aiosqlite.Connection, path: Path) -> None:
    """Refuse a file another program made, before anything is written to it: ctxkeep's files carry its application
    id (from migration 8) or, before that, its first migration; an empty file is new."""
    cursor = await conn.execute("PRAGMA application_id")
    row = await cursor.fetchone()
    if row is not None and int(row[0]) == APPLICATION_ID:
        return
    cursor = await conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
    tables = [name for (name,) in await cursor.fetchall()]
    if not tables or (
        "schema_migrations" in tables and await _first_migration_is_ours(conn, alone=tables == ["schema_migrations"])
    ):
        return
    shown = ", ".join(tables[:8]) + (", …" if len(tables) > 8 else "")
    raise DatabaseUnavailable(
        f"database {path} is not a ctxkeep database: it is an SQLite file of another program (tables: {shown}); ctxkeep "
        "left it unchanged and writes only into its own files; point CTXKEEP_DB at a new file"
    )


async def _first_migration_is_ours(conn: aiosqlite.Connection, alone: bool) -> bool:
    """Version 1 of schema_migrations is ctxkeep's first migration (or, when it is the only table, none is recorded:
    an open that stopped before its first migration)."""
    try:
        cursor = await conn.execute("SELECT name FROM schema_migrations WHERE version = 1")
    except sqlite3.Error:  # another program's table of that name, without these columns
        return False
    row = await cursor.fetchone()
    return row[0] == FIRST_MIGRATION if row is not None else alone


async def schema_version(conn: aiosqlite.Connection) -> int:
    """The newest migration applied to the file (0 for a new file)."""
    try:
        cursor = await conn.execute("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
    except sqlite3.OperationalError:
        return 0  # no migrations table yet
    row = await cursor.fetchone()
    return int(row[0]) if row else 0


def too_new(path: Path, applied: int) -> SchemaTooNew:
    return SchemaTooNew(
        f"database {path} has schema version {applied}, newer than this ctxkeep knows ({LATEST}); "
        "upgrade ctxkeep (pip install -U ctxkeep) or point CTXKEEP_DB at another file"
    )


async def migrate(conn: aiosqlite.Connection, write: Write, path: Path) -> None:
    """Apply the migrations the file lacks, each in its own transaction; raises SchemaTooNew for a newer file."""
    async with write() as tx:
        await tx.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
        )
    applied = await schema_version(conn)
    if applied > LATEST:
        raise too_new(path, applied)
    for version, name, sql in MIGRATIONS:
        if version > applied:
            await _apply(conn, write, version, name, sql)


async def _apply(conn: aiosqlite.Connection, write: Write, version: int, name: str, sql: str) -> None:
    keys_off = version in FOREIGN_KEYS_OFF
    if keys_off:
        await conn.execute("PRAGMA foreign_keys = OFF")  # only outside a transaction
    try:
        async with write() as tx:
            cursor = await tx.execute("SELECT 1 FROM schema_migrations WHERE version = ?", (version,))
            if await cursor.fetchone():
                return  # another process applied it while we waited for the lock
            for statement in statements(sql):
                await tx.execute(statement)
            if keys_off and await (await tx.execute("PRAGMA foreign_key_check")).fetchone():
                raise DatabaseUnavailable(
                    f"migration {version} ({name}) would break a reference between tables; nothing was changed"
                )
            await tx.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", (version, name))
    finally:
        if keys_off:
            await conn.execute("PRAGMA foreign_keys = ON")


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
