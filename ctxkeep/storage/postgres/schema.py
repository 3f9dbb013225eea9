"""What the PostgreSQL store checks and does when it opens: that the schema it works in is ctxkeep's (or empty), its
migrations (each in its own transaction, under an advisory lock so two servers starting at once apply each once), and
the database's random term key."""

from __future__ import annotations

import secrets

import asyncpg

from ctxkeep.errors import DatabaseUnavailable, SchemaTooNew
from ctxkeep.storage.postgres.migrations import FIRST_MIGRATION, LATEST, MIGRATIONS
from ctxkeep.storage.postgres.connection import Conn

MIGRATION_LOCK = 0x6374786B00000001  # "ctxk" and 1: one migrating process at a time per database


async def _tables(conn: Conn) -> list[str]:
    rows = await conn.fetch("SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename")
    return [str(row[0]) for row in rows]


async def check_ours(conn: Conn, where: str) -> None:
    """Refuse a schema another program uses, before anything is written to it; an empty schema is new."""
    tables = await _tables(conn)
    if not tables:
        return
    if "schema_migrations" in tables:
        try:
            name = await conn.fetchval("SELECT name FROM schema_migrations WHERE version = 1")
        except asyncpg.PostgresError:
            name = None
        if name == FIRST_MIGRATION or (name is None and tables == ["schema_migrations"]):
            return
    shown = ", ".join(tables[:8]) + (", …" if len(tables) > 8 else "")
    raise DatabaseUnavailable(
        f"database {where} is not a ctxkeep database: its schema holds tables of another program ({shown}); ctxkeep left it "
        "unchanged; point CTXKEEP_DB at an empty database, or add ?search_path=<an empty schema> to the URL"
    )


async def schema_version(conn: Conn) -> int:
    if "schema_migrations" not in await _tables(conn):
        return 0
    return int(await conn.fetchval("SELECT COALESCE(MAX(version), 0) FROM schema_migrations"))


def too_new(where: str, applied: int) -> SchemaTooNew:
    return SchemaTooNew(
        f"database {where} has schema version {applied}, newer than this ctxkeep knows ({LATEST}); "
        "upgrade ctxkeep (pip install -U ctxkeep) or point CTXKEEP_DB at another database"
    )


async def migrate(conn: Conn, where: str) -> None:
    """Apply the migrations the schema lacks, each in its own transaction; raises SchemaTooNew for a newer one."""
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
            "applied_at TIMESTAMPTZ NOT NULL DEFAULT now())"
        )
    applied = await schema_version(conn)
    if applied > LATEST:
        raise too_new(where, applied)
    for version, name, sql in MIGRATIONS:
        if version <= applied:
            continue
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", MIGRATION_LOCK)
            if await conn.fetchval("SELECT 1 FROM schema_migrations WHERE version = $1", version):
                continue  # another process applied it while we waited for the lock
            await conn.execute(sql)
            await conn.execute("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", version, name)


async def term_key(conn: Conn) -> bytes:
    """The database's term key: 32 random bytes made once (the first process to open it wins)."""
    await conn.execute(
        "INSERT INTO store_meta (name, value) VALUES ('term_key', $1) ON CONFLICT (name) DO NOTHING",
        secrets.token_bytes(32).hex(),
    )
    return bytes.fromhex(str(await conn.fetchval("SELECT value FROM store_meta WHERE name = 'term_key'")))
