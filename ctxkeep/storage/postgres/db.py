"""The PostgreSQL store: an asyncpg pool on one database (and schema), its migrations and transactions.

Chosen by `CTXKEEP_DB=postgresql://user:password@host:port/database` (add `?search_path=<schema>` to keep ctxkeep in a
schema of its own). Writes run in READ COMMITTED transactions that lock each project they touch (`session`), so
saves, `expected_version` checks and leases behave as on SQLite; reads run in REPEATABLE READ READ ONLY snapshots.
A commit returns only once PostgreSQL has made it durable (synchronous_commit as the server sets it; its default is
on), so an acknowledged write is not lost when a server process is killed. Deleted bytes are rewritten out of the
tables afterwards (`maintenance`: what PostgreSQL can and cannot guarantee about them).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import asyncpg

from ctxkeep.errors import DatabaseUnavailable
from ctxkeep.db_location import scrubbed, shown_location
from ctxkeep.storage.interface import Store
from ctxkeep.storage.postgres import schema
from ctxkeep.storage.postgres.checkpoints import Checkpoints
from ctxkeep.storage.postgres.digests import Cursors, Digests
from ctxkeep.storage.postgres.evidence import Evidence
from ctxkeep.storage.postgres.inbox import Inbox
from ctxkeep.storage.postgres.index import TermKey
from ctxkeep.storage.postgres.journal import Journal
from ctxkeep.storage.postgres.leases import Leases, Tokens
from ctxkeep.storage.postgres.maintenance import Maintenance, owed, vacuum_owed
from ctxkeep.storage.postgres.memories import Memories
from ctxkeep.storage.postgres.migrations import LATEST
from ctxkeep.storage.postgres.session import Conn, Session
from ctxkeep.storage.postgres.sessions import Sessions
from ctxkeep.storage.postgres.stats import Stats
from ctxkeep.storage.postgres.working_sets import WorkingSets

logger = logging.getLogger("ctxkeep")
POOL_SIZE = 8


async def _keep_session(conn: Conn) -> None:
    """What a connection needs when it goes back to the pool: nothing. The store uses no session state (its locks are
    transaction locks, its statements end with their transactions, the one SET it makes is undone in place), and
    asyncpg's default reset (unlock all, close all, unlisten, reset all) was a round trip per transaction."""


class PostgresTx:
    """The queries available inside one transaction (or one read), over one connection."""

    def __init__(self, session: Session, key: TermKey) -> None:
        self.maintenance = Maintenance(session.conn)
        self.checkpoints = Checkpoints(session)
        self.evidence = Evidence(session, key, self.maintenance)
        self.digests = Digests(session, self.maintenance)
        self.cursors = Cursors(session)
        self.working_sets = WorkingSets(session, self.maintenance)
        self.memories = Memories(session, key, self.maintenance)
        self.journal = Journal(session)
        self.sessions = Sessions(session)
        self.stats = Stats(session)
        self.inbox = Inbox(session, self.maintenance)
        self.leases = Leases(session)
        self.tokens = Tokens(session)


class PostgresStore(Store):
    """An open ctxkeep PostgreSQL database. Open with `await PostgresStore.open(url)`; close with `await store.close()`."""

    def __init__(self, pool: asyncpg.Pool, url: str, busy_timeout_ms: int) -> None:
        self._pool = pool
        self.url = url
        self.path = Path()
        self.location = shown_location(url)
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._key = TermKey(b"")
        self._project_ids: dict[str, int] = {}
        self._standby: str | None = None
        self._owed = False
        self._finishing = False

    @classmethod
    async def open(cls, location: Path | str, busy_timeout_ms: int = 5_000) -> PostgresStore:
        """Connect, check the schema is ctxkeep's (or empty), migrate; raises SchemaTooNew or DatabaseUnavailable."""
        url = str(location)
        where = shown_location(url)
        try:
            pool = await asyncpg.create_pool(
                url,
                min_size=1,
                max_size=POOL_SIZE,
                command_timeout=None,
                reset=_keep_session,
                # custom plans always: asyncpg prepares every statement, and after five runs PostgreSQL may switch a
                # statement to a generic plan, which for the scoring query over arrays was 5x slower
                server_settings={
                    "application_name": "ctxkeep",
                    "lock_timeout": str(max(1, int(busy_timeout_ms))),
                    "plan_cache_mode": "force_custom_plan",
                },
            )
        except ValueError as exc:  # the driver cannot read the URL; its message quotes pieces of it
            raise DatabaseUnavailable(
                f"database {where}: CTXKEEP_DB is not a URL the PostgreSQL driver can read; percent-encode the "
                "characters of the user and password that a URL reserves (# as %23, / as %2F, ? as %3F, @ as %40, "
                ": as %3A, % as %25), or pass the password as ?password=…"
            ) from exc
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise DatabaseUnavailable(
                f"database {where}: cannot connect: {scrubbed(str(exc), url)}; check that the server runs and that "
                "CTXKEEP_DB names its host, port, database, user and password"
            ) from exc
        store = cls(pool, url, busy_timeout_ms)
        try:
            await store._start()
        except asyncpg.PostgresError as exc:
            await pool.close()
            raise DatabaseUnavailable(f"database {where}: {exc}") from exc
        except BaseException:
            await pool.close()
            raise
        return store

    async def _start(self) -> None:
        async with self._pool.acquire() as conn:
            if await conn.fetchval("SELECT pg_is_in_recovery()"):
                self._standby = (
                    f"database {self.location} is a read-only standby (in recovery): it serves reads only; "
                    "point CTXKEEP_DB at the primary server to write"
                )
                applied = await schema.schema_version(conn)
                if applied != LATEST:
                    raise DatabaseUnavailable(f"{self._standby}, and its schema is {applied}, not {LATEST}")
                self._key = TermKey(
                    bytes.fromhex(str(await conn.fetchval("SELECT value FROM store_meta WHERE name = 'term_key'")))
                )
                return
            await schema.check_ours(conn, self.location)
            await schema.migrate(conn, self.location)
            self._key = TermKey(await schema.term_key(conn))
            self._owed = bool(await owed(conn))
        if self._owed:
            await self._finish_owed(wait=False)

    async def close(self) -> None:
        await self._pool.close()

    async def schema_version(self) -> int:
        async with self._pool.acquire() as conn:
            return await schema.schema_version(conn)

    async def checkpoint_wal(self) -> bool:
        """Finish what deletes left owed: rewrite the tables that held deleted rows (VACUUM FULL), waiting up to the
        busy timeout for each table's lock; False when a lock or an error kept one from finishing (it stays owed)."""
        return await self._finish_owed(wait=True)

    async def _finish_owed(self, wait: bool) -> bool:
        if self._standby is not None or self._finishing:
            return False
        self._finishing = True
        try:
            async with self._pool.acquire() as conn:
                done = await vacuum_owed(conn, self._busy_timeout_ms if wait else 50)
            self._owed = not done
            return done
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            logger.warning("ctxkeep could not finish what a delete left owed (it stays owed): %s", exc)
            self._owed = True
            return False
        finally:
            self._finishing = False

    def read_only(self) -> str | None:
        return self._standby

    async def integrity_check(self) -> str:
        """'ok' when the schema is current and every project's index totals match its records, else what is wrong."""
        problems: list[str] = []
        async with self._pool.acquire() as conn:
            applied = await schema.schema_version(conn)
            if applied != LATEST:
                problems.append(f"schema {applied}, expected {LATEST}")
            rows = await conn.fetch(
                "SELECT p.project, s.docs, (SELECT count(*) FROM evidence e WHERE e.project = p.project) AS records "
                "FROM projects p JOIN index_stats s ON s.project_id = p.id AND s.kind = 'evidence' ORDER BY p.project"
            )
            problems += [
                f"project {row[0]}: the index counts {row[1]} records, {row[2]} are stored"
                for row in rows
                if row[1] != row[2]
            ]
        return "\n".join(problems) or "ok"

    @asynccontextmanager
    async def _transaction(self, writing: bool) -> AsyncIterator[PostgresTx]:
        """A transaction on a pooled connection; commit and rollback are shielded from cancellation, so a cancelled
        caller never leaves a connection inside a transaction. Driver errors become DatabaseUnavailable."""
        if writing and self._standby is not None:
            raise DatabaseUnavailable(self._standby)
        try:
            async with self._pool.acquire() as conn:
                transaction = (
                    conn.transaction() if writing else conn.transaction(isolation="repeatable_read", readonly=True)
                )
                with anyio.CancelScope(shield=True):
                    await transaction.start()
                try:
                    yield PostgresTx(Session(conn, writing, self._project_ids), self._key)
                except BaseException:
                    with anyio.CancelScope(shield=True):
                        try:
                            await transaction.rollback()
                        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                            pass  # the original error says more than a failed rollback
                    raise
                with anyio.CancelScope(shield=True):
                    await transaction.commit()
        except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError) as exc:
            raise self._unavailable(exc) from exc

    def _unavailable(self, exc: BaseException) -> DatabaseUnavailable:
        if isinstance(exc, asyncpg.LockNotAvailableError):
            return DatabaseUnavailable(
                f"database {self.location} is busy: another writer held the project longer than "
                f"CTXKEEP_BUSY_TIMEOUT_MS ({self._busy_timeout_ms} ms); retry"
            )
        if isinstance(exc, asyncpg.DiskFullError):
            return DatabaseUnavailable(
                f"database {self.location}: the server's disk is full; nothing was written (free space "
                "on the PostgreSQL server, then retry)"
            )
        return DatabaseUnavailable(f"database {self.location}: {type(exc).__name__}: {exc}")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[PostgresTx]:
        """A write transaction: commits on exit, rolls back and re-raises on error; afterwards, tables an earlier delete
        left owed are rewritten when their locks are free (never waiting long for one)."""
        async with self._transaction(writing=True) as tx:
            yield tx
        if tx.maintenance.owes:
            self._owed = True  # the caller finishes it (checkpoint_wal) right away
        elif self._owed:
            await self._finish_owed(wait=False)

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[PostgresTx]:
        async with self._transaction(writing=False) as tx:
            yield tx
