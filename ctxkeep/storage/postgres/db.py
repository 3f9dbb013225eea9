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
from ctxkeep.db_location import DEFAULT_DB_TIMEOUT_MS
from ctxkeep.storage.backoff import Backoff
from ctxkeep.storage.interface import Store
from ctxkeep.storage.postgres import schema
from ctxkeep.storage.postgres.errors import DRIVER_ERRORS, unavailable
from ctxkeep.storage.postgres.evidence import Evidence
from ctxkeep.storage.postgres.index import Folds, TermKey, fold
from ctxkeep.storage.postgres.maintenance import Maintenance, owed, vacuum_owed
from ctxkeep.storage.postgres.memories import Memories
from ctxkeep.storage.postgres.migrations import LATEST
from ctxkeep.storage.postgres.connection import Conn
from ctxkeep.storage.postgres.session import Pool, Session
from ctxkeep.storage.postgres.statements import PostgresDb
from ctxkeep.storage.postgres.tables import Checkpoints, Stats, WorkingSets
from ctxkeep.storage.sql.digests import Cursors, Digests
from ctxkeep.storage.sql.inbox import Inbox
from ctxkeep.storage.sql.journal import Journal
from ctxkeep.storage.sql.leases import Leases, Tokens
from ctxkeep.storage.sql.sessions import Sessions

logger = logging.getLogger("ctxkeep")
POOL_SIZE = 8
CLIENT_GRACE_S = 2.0  # asyncpg's own timeout, after the server's statement_timeout: for a server that does not answer


async def _keep_session(conn: Conn) -> None:
    """What a connection needs when it goes back to the pool: nothing. The store uses no session state (its locks are
    transaction locks, its statements end with their transactions, the one SET it makes is undone in place), and
    asyncpg's default reset (unlock all, close all, unlisten, reset all) was a round trip per transaction."""


class PostgresTx:
    """The queries available inside one transaction (or one read), over one connection."""

    def __init__(self, session: Session, key: TermKey) -> None:
        self.maintenance = Maintenance(session)
        db = PostgresDb(session, self.maintenance)
        self.checkpoints = Checkpoints(db, session)
        self.evidence = Evidence(session, key, self.maintenance)
        self.digests = Digests(db)
        self.cursors = Cursors(db)
        self.working_sets = WorkingSets(db)
        self.memories = Memories(session, key, self.maintenance)
        self.journal = Journal(db)
        self.sessions = Sessions(db)
        self.stats = Stats(db)
        self.inbox = Inbox(db)
        self.leases = Leases(db)
        self.tokens = Tokens(db)


class PostgresStore(Store):
    """An open ctxkeep PostgreSQL database. Open with `await PostgresStore.open(url)`; close with `await store.close()`."""

    def __init__(self, pool: Pool, url: str, busy_timeout_ms: int, timeout_ms: int) -> None:
        self._pool = pool
        self.url = url
        self.path = Path()
        self.location = shown_location(url)
        self._busy_timeout_ms = int(busy_timeout_ms)
        self._timeout_ms = int(timeout_ms)
        self._key = TermKey(b"")
        self._project_ids: dict[str, int] = {}
        self._standby: str | None = None
        self._owed = False
        self._finishing = False
        self._reach = Backoff()
        self._folds = Folds()

    @classmethod
    async def open(
        cls, location: Path | str, busy_timeout_ms: int = 5_000, timeout_ms: int = DEFAULT_DB_TIMEOUT_MS
    ) -> PostgresStore:
        """Connect, check the schema is ctxkeep's (or empty), migrate; raises SchemaTooNew or DatabaseUnavailable.

        Time limits come from `timeout_ms` (CTXKEEP_DB_TIMEOUT_MS): each statement (server-side statement_timeout,
        and asyncpg's command_timeout a little later for a server that does not answer at all), each wait for a
        pooled connection, each connection attempt. Waits for another writer stop at `busy_timeout_ms`."""
        url = str(location)
        where = shown_location(url)
        seconds = max(1, int(timeout_ms)) / 1000
        try:
            pool = await asyncpg.create_pool(
                url,
                min_size=0,  # connections made on demand: no background reconnecting (and logging) while it is down
                max_size=POOL_SIZE,
                timeout=seconds,  # connecting
                command_timeout=seconds + CLIENT_GRACE_S,  # the server's statement_timeout answers first
                reset=_keep_session,
                # custom plans always: asyncpg prepares every statement, and after five runs PostgreSQL may switch a
                # statement to a generic plan, which for the scoring query over arrays was 5x slower
                server_settings={
                    "application_name": "ctxkeep",
                    "lock_timeout": str(max(1, int(busy_timeout_ms))),
                    "statement_timeout": str(max(1, int(timeout_ms))),
                    "plan_cache_mode": "force_custom_plan",
                },
            )
        except ValueError as exc:
            raise _unreadable(where) from exc
        except DRIVER_ERRORS as exc:
            raise _refused(exc, url, busy_timeout_ms, timeout_ms) from exc
        store = cls(pool, url, busy_timeout_ms, timeout_ms)
        try:
            await store._start()  # the first connection (the pool makes them on demand)
        except ValueError as exc:
            await _close(pool)
            raise _unreadable(where) from exc
        except DRIVER_ERRORS as exc:
            await _close(pool)
            raise _refused(exc, url, busy_timeout_ms, timeout_ms) from exc
        except BaseException:
            await _close(pool)
            raise
        return store

    async def _start(self) -> None:
        async with self._pool.acquire(timeout=self._acquire_s) as conn:
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

    @property
    def _acquire_s(self) -> float:
        return max(1, self._timeout_ms) / 1000

    async def close(self) -> None:
        await _close(self._pool)

    async def schema_version(self) -> int:
        try:
            async with self._pool.acquire(timeout=self._acquire_s) as conn:
                return await schema.schema_version(conn)
        except DRIVER_ERRORS as exc:
            raise self._unavailable(exc) from exc

    async def checkpoint_wal(self) -> bool:
        """Finish what deletes left owed: rewrite the tables that held deleted rows (VACUUM FULL), waiting up to the
        busy timeout for each table's lock; False when a lock or an error kept one from finishing (it stays owed)."""
        return await self._finish_owed(wait=True)

    async def _finish_owed(self, wait: bool) -> bool:
        if self._standby is not None or self._finishing:
            return False
        self._finishing = True
        try:
            async with self._pool.acquire(timeout=self._acquire_s) as conn:
                done = await vacuum_owed(conn, self._busy_timeout_ms if wait else 50)
            self._owed = not done
            return done
        except DRIVER_ERRORS as exc:
            logger.warning(
                "ctxkeep could not finish what a delete left owed (it stays owed): %s", self._unavailable(exc)
            )
            self._owed = True
            return False
        finally:
            self._finishing = False

    def read_only(self) -> str | None:
        return self._standby

    async def integrity_check(self) -> str:
        """'ok' when the schema is current and every project's index totals match its records, else what is wrong."""
        problems: list[str] = []
        try:
            async with self._pool.acquire(timeout=self._acquire_s) as conn:
                applied = await schema.schema_version(conn)
                if applied != LATEST:
                    problems.append(f"schema {applied}, expected {LATEST}")
                rows = await conn.fetch(
                    "SELECT p.project, COALESCE((SELECT sum(s.docs) FROM index_stats s WHERE s.project_id = p.id "
                    "AND s.kind = 'evidence'), 0) AS docs, (SELECT count(*) FROM evidence e WHERE e.project = p.project) "
                    "AS records FROM projects p ORDER BY p.project"
                )
        except DRIVER_ERRORS as exc:
            raise self._unavailable(exc) from exc
        problems += [
            f"project {row[0]}: the index counts {row[1]} records, {row[2]} are stored"
            for row in rows
            if row[1] != row[2]
        ]
        return "\n".join(problems) or "ok"

    @asynccontextmanager
    async def _transaction(self, writing: bool) -> AsyncIterator[PostgresTx]:
        """A transaction begun at its first query on a pooled connection; commit and rollback are shielded from
        cancellation, so a cancelled caller never leaves a connection inside a transaction. Every driver error becomes
        DatabaseUnavailable; while the server cannot be reached, calls fail at once until the next attempt is due."""
        if writing and self._standby is not None:
            raise DatabaseUnavailable(self._standby)
        self._reach.check()
        session = Session(self._pool, writing, self._project_ids, self._acquire_s, self._folds, self.location)
        try:
            try:
                yield PostgresTx(session, self._key)
            except BaseException as exc:
                await session.finish(exc)
                raise
            await session.finish(None)
        except DRIVER_ERRORS as exc:
            failure = self._unavailable(exc)
            if not session.reached:
                self._reach.failed(failure)
            if isinstance(exc, asyncpg.LockNotAvailableError):
                statement = " ".join(str(getattr(exc, "query", "") or "").split())[:160]
                logger.warning(
                    "ctxkeep: a write gave up waiting for a row another transaction held (CTXKEEP_BUSY_TIMEOUT_MS); "
                    "its statement: %s",
                    statement or "(unknown)",
                )
            raise failure from exc
        if session.reached:
            self._reach.succeeded()
        if self._folds.due and self._standby is None:
            await self._fold_due()

    async def _fold_due(self) -> None:
        """Fold the totals rows that are due (`index.Folds`), each in a short transaction of its own; a failure only
        leaves them for later."""
        for postings, project_id in self._folds.take():
            try:
                async with self._pool.acquire(timeout=self._acquire_s) as conn:
                    await fold(conn, postings, project_id)
            except DRIVER_ERRORS as exc:
                logger.debug("ctxkeep: folding the index totals of project %s failed: %s", project_id, exc)

    def _unavailable(self, exc: BaseException) -> DatabaseUnavailable:
        return unavailable(exc, self.location, self._busy_timeout_ms, self._timeout_ms)

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


async def _close(pool: Pool) -> None:
    """Close the pool, giving a server that does not answer a few seconds before its connections are dropped."""
    try:
        with anyio.fail_after(5):
            await pool.close()
    except DRIVER_ERRORS:  # TimeoutError among them
        pool.terminate()


def _unreadable(where: str) -> DatabaseUnavailable:
    """The driver cannot read the URL (its own message quotes pieces of it, the password's among them)."""
    return DatabaseUnavailable(
        f"database {where}: CTXKEEP_DB is not a URL the PostgreSQL driver can read; percent-encode the characters of "
        "the user and password that a URL reserves (# as %23, / as %2F, ? as %3F, @ as %40, : as %3A, % as %25), or "
        "pass the password as ?password=…"
    )


def _refused(exc: BaseException, url: str, busy_timeout_ms: int, timeout_ms: int) -> DatabaseUnavailable:
    """A first connection that failed, said without the URL's secrets (the driver's message may quote them)."""
    said = unavailable(exc, shown_location(url), busy_timeout_ms, timeout_ms)
    return DatabaseUnavailable(
        f"{scrubbed(str(said), url)}; check too that CTXKEEP_DB names its host, port, database, user and password"
    )
