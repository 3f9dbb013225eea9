"""Work a delete leaves owed, recorded inside the deleting transaction: rewriting the tables that held the deleted
bytes (`VACUUM FULL`), so they are gone from the database's files and not merely marked free (the evidence postings,
which hold no text, are vacuumed in place: `PLAIN`).

Why FULL: a plain VACUUM makes a dead row's space reusable and removes its index entries, but PostgreSQL does not
zero freed space inside a page: the bytes of a deleted row can stay in the page until new rows overwrite them
(tests/storage/test_postgres_forget.py shows it). VACUUM FULL writes the table and its indexes and TOAST into new files and
unlinks the old ones. It needs an exclusive lock on the table; when another session holds one past the lock timeout
the work stays owed and is finished after the store's next write or at its next open. It also copies the deleted rows
along while any snapshot older than the delete is open (in any schema, by any program: the database's horizon), so
it waits for those the same way: owed until then.

What PostgreSQL cannot promise, and this does not either: the old files' blocks are freed to the file system, not
overwritten; the write-ahead log keeps the deleted rows until its segments are recycled and overwritten (a CHECKPOINT,
attempted afterwards, lets that happen sooner; it needs the pg_checkpoint role), and WAL archives, replicas and backups
keep what they copied.
"""

from __future__ import annotations

import secrets
import time

import anyio
import asyncpg

from ctxkeep.storage.postgres.connection import Conn
from ctxkeep.storage.postgres.session import Session

VACUUM = "owed:vacuum:"
TABLES = frozenset(
    {
        "evidence",
        "blobs",
        "evidence_terms",
        "memories",
        "memory_terms",
        "working_sets",
        "task_digests",
        "evidence_inbox",
    }
)
# vacuumed, not rewritten: the evidence postings hold no text (keyed 48-bit hashes and counts), and rewriting them
# (1.7 GB at 100,000 records of 2 KB: 11 s under an exclusive lock that stops every search) for each delete would not
# be worth what it removes; a plain VACUUM takes their entries out of the index and frees their space for reuse
PLAIN = frozenset({"evidence_terms"})
_LONG_S = 3600.0


class Maintenance:
    """The owed work of one transaction's connection; `owes` says this transaction added some."""

    def __init__(self, session: Session) -> None:
        self._s = session
        self.owes = False

    async def owe_vacuum(self, *tables: str) -> None:
        """Record the debt as new rows (one per table, a random suffix each), valued with the deleting transaction's
        id: two deletes never write the same row, so they never wait for each other, a vacuum that started before
        this debt does not clear it, and the rewrite waits until no snapshot older than the delete is left."""
        assert all(table in TABLES for table in tables), tables
        conn = await self._s.begun()
        await conn.execute(
            "INSERT INTO store_meta (name, value) SELECT $1 || t || ':' || $2, txid_current()::text "
            "FROM unnest($3::text[]) AS t",
            VACUUM,
            secrets.token_hex(8),
            list(tables),
        )
        self.owes = True


async def owed(conn: Conn) -> list[tuple[str, str]]:
    rows = await conn.fetch("SELECT name, value FROM store_meta WHERE name LIKE 'owed:%' ORDER BY name")
    return [(str(row[0]), str(row[1])) for row in rows]


async def _no_older_snapshot(conn: Conn, deleting_txid: int, wait_s: float) -> bool:
    """Whether no snapshot older than the delete is left, waiting up to `wait_s` for the last ones to end."""
    deadline = time.monotonic() + wait_s
    while await _seen_by_an_older_snapshot(conn, deleting_txid):
        if time.monotonic() >= deadline:
            return False
        await anyio.sleep(0.05)
    return True


async def _seen_by_an_older_snapshot(conn: Conn, deleting_txid: int) -> bool:
    """Whether a session of the database (any schema, any program) or a replication slot still holds a snapshot
    taken before the deleting transaction: VACUUM FULL keeps the rows such a snapshot may see ("recently dead"), so a
    rewrite now would copy the deleted text into the new files. 0 (a debt recorded without its transaction): no."""
    if deleting_txid <= 0:
        return False
    return bool(
        await conn.fetchval(
            "SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE datname = current_database() "
            "AND pid <> pg_backend_pid() AND backend_xmin IS NOT NULL AND age(backend_xmin) >= age($1::text::xid)) "
            "OR EXISTS (SELECT 1 FROM pg_replication_slots WHERE database = current_database() AND xmin IS NOT NULL "
            "AND age(xmin) >= age($1::text::xid))",
            str(deleting_txid % 2**32),
        )
    )


async def vacuum_owed(conn: Conn, lock_timeout_ms: int) -> bool:
    """Rewrite every owed table (outside any transaction), clearing each debt once done; False when a lock or an
    older snapshot that may still see the deleted rows (each waited for up to `lock_timeout_ms`), or an error, kept
    one from finishing (it stays owed). The session's lock timeout is restored afterwards."""
    done = True
    await conn.execute(f"SET lock_timeout = {max(1, int(lock_timeout_ms))}")
    await conn.execute("SET statement_timeout = 0")
    try:
        debts: dict[str, list[str]] = {}
        deleted_by: dict[str, int] = {}
        for name, value in await owed(conn):
            table = name.removeprefix(VACUUM).split(":", 1)[0]
            debts.setdefault(table, []).append(name)
            deleted_by[table] = max(deleted_by.get(table, 0), int(value) if value.isdigit() else 0)
        for table, names in debts.items():
            if table not in TABLES:  # a table a later migration dropped: nothing of it is left to rewrite
                await conn.execute("DELETE FROM store_meta WHERE name = ANY($1::text[])", names)
                continue
            if not await _no_older_snapshot(conn, deleted_by[table], lock_timeout_ms / 1000):
                done = False  # the rewrite would copy the deleted rows along: it stays owed
                continue
            try:
                # a rewrite may take long: no statement timeout for it (its lock wait stays bounded)
                await conn.execute(f"VACUUM {table}" if table in PLAIN else f"VACUUM (FULL) {table}", timeout=_LONG_S)
            except asyncpg.PostgresError:
                done = False
                continue
            await conn.execute("DELETE FROM store_meta WHERE name = ANY($1::text[])", names)
    finally:
        await conn.execute("RESET lock_timeout")  # back to the connection's own (CTXKEEP_BUSY_TIMEOUT_MS)
        await conn.execute("RESET statement_timeout")  # and CTXKEEP_DB_TIMEOUT_MS
    try:
        await conn.execute("CHECKPOINT")  # lets the WAL segments that hold deleted rows be recycled
    except asyncpg.PostgresError:
        pass  # without the pg_checkpoint role: the server's own checkpoints do it later
    return done
