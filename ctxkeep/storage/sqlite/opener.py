"""Opening a ctxkeep SQLite file: the one opener and migration runner, for the Store and the hooks alike.

`open_database` connects (read-write, or read-only when the file cannot be written), checks the file is ctxkeep's
before anything is written to it, sets the pragmas (WAL, busy_timeout, foreign keys, secure_delete, synchronous
NORMAL) and applies the numbered migrations the file lacks (`migrations.py`), each in its own transaction. A
migration that rebuilds a table others reference runs with foreign keys off and is checked before it commits. A file
written by a newer ctxkeep is refused, never migrated down. The hooks call it directly (standard library only: they
run on every tool call); the Store runs it on aiosqlite's thread as the connection's connector, so both open a file
the same way (paths as str: pathlib costs a hook process urllib.parse and ipaddress). Work that needs more than SQL (the file's term key, re-indexing stored text) is the Store's
(`schema.finish_index`). Errors: DatabaseUnavailable (another program's file, a migration that would break a
reference), SchemaTooNew, and the driver's sqlite3.Error (the caller says what it means for the file).
"""

from __future__ import annotations

import os
import sqlite3

from ctxkeep.errors import DatabaseUnavailable, SchemaTooNew
from ctxkeep.storage.sqlite.migrations import (
    APPLICATION_ID,
    FIRST_MIGRATION,
    FOREIGN_KEYS_OFF,
    LATEST,
    MIGRATIONS,
    statements,
)

SCHEMA_VERSION = "SELECT COALESCE(MAX(version), 0) FROM schema_migrations"
PRAGMAS = ("foreign_keys = ON", "secure_delete = ON", "synchronous = NORMAL")


def open_database(
    path: str | os.PathLike[str], busy_timeout_ms: int = 5_000, writable: bool = True, any_thread: bool = False
) -> sqlite3.Connection:
    """The file at `path` (which must exist), checked, set up and migrated, in autocommit mode; read-only when
    `writable` is false (then it must not be newer than this ctxkeep; migrations are left to a writable open).
    `any_thread`: the connection may be used from any thread (the caller serializes its use)."""
    conn = _connect(path, writable, busy_timeout_ms, any_thread)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        check_ours(conn, path)
        if writable:
            tighten(path)  # before journal_mode creates the -wal and -shm with the file's mode
            conn.execute("PRAGMA journal_mode = WAL")
        for pragma in PRAGMAS:
            conn.execute(f"PRAGMA {pragma}")
        if writable:
            migrate(conn, path)
        elif schema_version(conn) > LATEST:
            raise too_new(path, schema_version(conn))
    except BaseException:
        conn.close()
        raise
    return conn


def _connect(
    path: str | os.PathLike[str], writable: bool, busy_timeout_ms: int, any_thread: bool = False
) -> sqlite3.Connection:
    """Read-write, or read-only (`mode=ro`; `immutable=1` when the folder cannot even hold the -shm a reader needs,
    as on a read-only mount)."""
    timeout = busy_timeout_ms / 1000
    if writable:
        return sqlite3.connect(path, isolation_level=None, timeout=timeout, check_same_thread=not any_thread)
    from urllib.parse import quote  # only here: the hooks always open for writing

    uri = f"file:{quote(str(path))}?mode=ro"
    conn = sqlite3.connect(uri, uri=True, isolation_level=None, timeout=timeout, check_same_thread=not any_thread)
    try:
        conn.execute("SELECT count(*) FROM sqlite_master")
        return conn
    except sqlite3.OperationalError:
        conn.close()
    return sqlite3.connect(
        uri + "&immutable=1", uri=True, isolation_level=None, timeout=timeout, check_same_thread=not any_thread
    )


def tighten(path: str | os.PathLike[str]) -> None:
    """Take group and other permissions off the database and its -wal and -shm, when this user owns them."""
    name = os.fspath(path)
    for file in (name, name + "-wal", name + "-shm"):
        try:
            info = os.stat(file)
            if info.st_uid == os.geteuid() and info.st_mode & 0o077:
                os.chmod(file, info.st_mode & 0o700)
        except OSError:
            pass  # absent, or on a read-only file system: doctor reports the mode


def check_ours(conn: sqlite3.Connection, path: str | os.PathLike[str]) -> None:
    """Refuse a file another program made, before anything is written to it: ctxkeep's files carry its application
    id (from migration 8) or, before that, its first migration; an empty file is new."""
    if int(conn.execute("PRAGMA application_id").fetchone()[0]) == APPLICATION_ID:
        return
    tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    if not tables or (
        "schema_migrations" in tables and _first_migration_is_ours(conn, tables == ["schema_migrations"])
    ):
        return
    shown = ", ".join(tables[:8]) + (", …" if len(tables) > 8 else "")
    raise DatabaseUnavailable(
        f"database {path} is not a ctxkeep database: it is an SQLite file of another program (tables: {shown}); ctxkeep "
        "left it unchanged and writes only into its own files; point CTXKEEP_DB at a new file"
    )


def _first_migration_is_ours(conn: sqlite3.Connection, alone: bool) -> bool:
    """Version 1 of schema_migrations is ctxkeep's first migration (or, when it is the only table, none is recorded:
    an open that stopped before its first migration)."""
    try:
        row = conn.execute("SELECT name FROM schema_migrations WHERE version = 1").fetchone()
    except sqlite3.Error:  # another program's table of that name, without these columns
        return False
    return bool(row[0] == FIRST_MIGRATION) if row is not None else alone


def schema_version(conn: sqlite3.Connection) -> int:
    """The newest migration applied to the file (0 for a new file)."""
    try:
        return int(conn.execute(SCHEMA_VERSION).fetchone()[0])
    except sqlite3.OperationalError:
        return 0  # no migrations table yet


def too_new(path: str | os.PathLike[str], applied: int) -> SchemaTooNew:
    return SchemaTooNew(
        f"database {path} has schema version {applied}, newer than this ctxkeep knows ({LATEST}); "
        "upgrade ctxkeep (pip install -U ctxkeep) or point CTXKEEP_DB at another file"
    )


def migrate(conn: sqlite3.Connection, path: str | os.PathLike[str]) -> None:
    """Apply the migrations the file lacks, each in its own transaction; SchemaTooNew for a newer file."""
    applied = schema_version(conn)
    if applied > LATEST:
        raise too_new(path, applied)
    if applied == LATEST:
        return
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
        "applied_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP)"
    )
    for version, name, sql in MIGRATIONS:
        if version > applied:
            _apply(conn, version, name, sql)


def _apply(conn: sqlite3.Connection, version: int, name: str, sql: str) -> None:
    keys_off = version in FOREIGN_KEYS_OFF
    if keys_off:
        conn.execute("PRAGMA foreign_keys = OFF")  # only outside a transaction
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            if conn.execute("SELECT 1 FROM schema_migrations WHERE version = ?", (version,)).fetchone() is None:
                for statement in statements(sql):  # (else another process applied it while this one waited)
                    conn.execute(statement)
                if keys_off and conn.execute("PRAGMA foreign_key_check").fetchone():
                    raise DatabaseUnavailable(
                        f"migration {version} ({name}) would break a reference between tables; nothing was changed"
                    )
                conn.execute("INSERT INTO schema_migrations (version, name) VALUES (?, ?)", (version, name))
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
    finally:
        if keys_off:
            conn.execute("PRAGMA foreign_keys = ON")
