"""One transaction of the PostgreSQL store: its pooled connection, begun at its first query, and the few locks a write
takes.

Locks are as narrow as the invariant. A write transaction locks no project: evidence is content-addressed (inserts
that find their record stored already do nothing), counters are appended rows, and every other row is its own
object. Only what must be serial is: the append to one task's hash chain together with its lease
(`lock("task", …)`), and the next version of one memory key (`lock("memory", …)`), each a transaction-level advisory
lock taken right before the conditional write and released at commit, so writes to other tasks never wait. Waiting
for one is bounded by lock_timeout (CTXKEEP_BUSY_TIMEOUT_MS); a wait of a second or more is logged, and a wait that
gives up logs who held the lock and what it was doing.

The connection is taken from the pool and `BEGIN` sent only when the first query runs (with it, in one round trip,
when that query is a lock), so Python work a caller does before it holds nothing; a connection found dead at that
point is replaced once, transparently (nothing had run on it).
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Awaitable
from typing import Any, TypeAlias, TypeVar

import anyio
import asyncpg

from ctxkeep.errors import DatabaseUnavailable
from ctxkeep.storage.postgres.connection import Pooled
from ctxkeep.storage.postgres.errors import DRIVER_ERRORS, is_connection_lost
from ctxkeep.storage.postgres.index import Folds

Pool: TypeAlias = "asyncpg.Pool[asyncpg.Record]"

logger = logging.getLogger("ctxkeep")
T = TypeVar("T")
_LOCK_SPACE = b"ctxkeep lock\n"
LOGGED_WAIT_S = 1.0


def object_lock(kind: str, project: str, name: str) -> int:
    """The advisory lock id of one object (`task` or `memory` key) of a project: 63 bits of a hash (a collision only
    makes two objects share a lock)."""
    material = _LOCK_SPACE + "\n".join([kind, project, name]).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(material, digest_size=8).digest(), "big", signed=True)


class Session:
    """The connection of one transaction (or snapshot), acquired and begun by the first `begun()`."""

    def __init__(
        self,
        pool: Pool,
        writing: bool,
        project_ids: dict[str, int],
        acquire_timeout_s: float,
        folds: Folds,
        where: str,
    ) -> None:
        self._pool = pool
        self._where = where  # the database as messages show it
        self.folds = folds
        self.writing = writing
        self._project_ids = project_ids  # the store's cache: a project's id never changes once committed
        self._acquire_timeout_s = acquire_timeout_s
        self._conn: Pooled | None = None
        self._reached = False
        self._done = False
        self._made: set[str] = set()  # projects this transaction made: not committed yet, so not cached

    async def begun(self, first: str = "") -> Pooled:
        """The transaction's connection, begun (acquired and begun now when this is its first query). `first`, a
        statement without parameters, runs right after: sent with BEGIN in one round trip when it begins here."""
        assert not self._done, "a transaction that ran a sole statement runs nothing after it"
        if self._conn is not None:
            if first:
                await self._conn.execute(first)
            return self._conn
        begin = "BEGIN" if self.writing else "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"
        for attempt in (1, 2):
            conn = await self._pool.acquire(timeout=self._acquire_timeout_s)
            try:
                await conn.execute(f"{begin}; {first}" if first else begin)
            except BaseException as exc:
                if not (isinstance(exc, DRIVER_ERRORS) and is_connection_lost(exc)):
                    self._conn, self._reached = conn, True  # begun, maybe: `finish` rolls it back
                    raise
                await self._drop(conn, exc)
                if attempt == 2:
                    raise
                continue  # a pooled connection that died while idle: nothing ran on it, take another
            self._conn, self._reached = conn, True
            return conn
        raise AssertionError("unreachable")

    async def sole(self, sql: str, *args: Any) -> Any:
        """Run one statement (its first value) as the whole transaction: when nothing has begun yet, on its own
        (autocommit: no BEGIN, no COMMIT, nothing held between round trips), and the transaction may run nothing
        after it; inside the transaction otherwise. The statement must be safe to run twice (a conditional write):
        on a connection found dead it runs once more on another."""
        if self._conn is not None:
            return await self._conn.fetchval(sql, *args)
        self._done = True
        for attempt in (1, 2):
            conn = await self._pool.acquire(timeout=self._acquire_timeout_s)
            self._reached = True
            try:
                value = await conn.fetchval(sql, *args)
            except BaseException as exc:
                await self._drop(conn, exc)
                if attempt == 2 or not (isinstance(exc, DRIVER_ERRORS) and is_connection_lost(exc)):
                    raise
                continue  # a pooled connection that died while idle
            await self._pool.release(conn)
            return value
        raise AssertionError("unreachable")

    @property
    def reached(self) -> bool:
        """Whether this transaction got a connection and began (the server answered)."""
        return self._reached

    async def finish(self, failure: BaseException | None) -> None:
        """Commit (no failure) or roll back, then give the connection back; a connection that is lost, or whose server
        does not answer, is closed instead of rolled back (the server rolls back what it held). Shielded from
        cancellation: a cancelled caller never leaves a connection inside a transaction."""
        conn = self._conn
        if conn is None:
            return
        self._conn = None
        with anyio.CancelScope(shield=True):
            try:
                if failure is None:
                    await conn.execute("COMMIT")
                elif isinstance(failure, DRIVER_ERRORS) and is_connection_lost(failure):
                    conn.terminate()
                else:
                    try:
                        await conn.execute("ROLLBACK")
                    except DRIVER_ERRORS:
                        conn.terminate()  # the original error says more than a failed rollback
            except BaseException as exc:
                await self._drop(conn, exc)
                raise
            await self._pool.release(conn)

    async def _drop(self, conn: Pooled, exc: BaseException) -> None:
        with anyio.CancelScope(shield=True):
            if isinstance(exc, DRIVER_ERRORS) and is_connection_lost(exc):
                conn.terminate()
            try:
                await self._pool.release(conn)
            except DRIVER_ERRORS:
                conn.terminate()

    async def lock(self, kind: str, project: str, name: str) -> None:
        """Make this write the only writer of one object until it ends (`kind` "task": its chain and lease; "memory":
        a key's versions); raises DatabaseUnavailable (busy) after CTXKEEP_BUSY_TIMEOUT_MS, logging who held it. As
        a transaction's first query it goes with BEGIN in one round trip."""
        assert self.writing, "only a write transaction locks"
        key = object_lock(kind, project, name)
        await self.holding(kind, project, name, self.begun(f"SELECT pg_advisory_xact_lock({int(key)})"))

    async def holding(self, kind: str, project: str, name: str, statement: Awaitable[T]) -> T:
        """Await a statement that takes one object's lock: a wait of LOGGED_WAIT_S or more is logged, and one that
        gives up (CTXKEEP_BUSY_TIMEOUT_MS) is logged with who held the lock and raised as DatabaseUnavailable (busy)."""
        started = time.monotonic()
        try:
            result = await statement
        except asyncpg.LockNotAvailableError as exc:
            waited = time.monotonic() - started
            holder = await self._holder(object_lock(kind, project, name))
            logger.warning(
                "ctxkeep: a write of %s %r (project %s) gave up after waiting %.1f s for another writer of it "
                "(CTXKEEP_BUSY_TIMEOUT_MS); the lock was held by %s",
                kind,
                name,
                project,
                waited,
                holder,
            )
            raise DatabaseUnavailable(
                f"database {self._where} is busy: another writer of {kind} {name!r} held it longer than "
                f"CTXKEEP_BUSY_TIMEOUT_MS ({waited * 1000:.0f} ms); nothing was written; retry"
            ) from exc
        waited = time.monotonic() - started
        if waited >= LOGGED_WAIT_S:
            logger.warning(
                "ctxkeep: a write of %s %r (project %s) waited %.1f s for another writer of it",
                kind,
                name,
                project,
                waited,
            )
        return result

    async def _holder(self, key: int) -> str:
        """Who holds an advisory lock, for the log: pid, application, state, for how long, its last statement."""
        try:
            async with self._pool.acquire(timeout=self._acquire_timeout_s) as other:
                row = await other.fetchrow(
                    "SELECT a.pid, a.application_name, a.state, extract(epoch FROM now() - a.xact_start), "
                    "left(a.query, 120) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                    "WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2 "
                    "AND l.objsubid = 1",
                    (key >> 32) & 0xFFFFFFFF,
                    key & 0xFFFFFFFF,
                    timeout=self._acquire_timeout_s,
                )
        except DRIVER_ERRORS as exc:
            return f"(unknown: {type(exc).__name__})"
        if row is None:
            return "(nobody by now)"
        return f"pid {row[0]} ({row[1] or '?'}, {row[2]}, in its transaction for {float(row[3] or 0):.1f} s, last: {row[4]!r})"

    async def project_id(self, project: str, create: bool = False) -> int | None:
        """The project's id in the index tables; None when it never stored anything indexed (unless `create`). Asked
        before the transaction begins, a new project's row is made in a statement of its own, committed at once, so
        concurrent first writes of a project do not wait for each other's transactions (an id stays valid when the
        write that made it rolls back); asked later, it is made inside the transaction."""
        found = self._project_ids.get(project)
        if found is not None:
            return found
        make = "INSERT INTO projects (project) VALUES ($1) ON CONFLICT (project) DO NOTHING"
        if create and self._conn is None:
            async with self._pool.acquire(timeout=self._acquire_timeout_s) as own:
                await own.execute(make, project)
        conn = await self.begun()
        value = await conn.fetchval("SELECT id FROM projects WHERE project = $1", project)
        if value is None and create:
            await conn.execute(make, project)  # waits for a concurrent maker, if any
            value = await conn.fetchval("SELECT id FROM projects WHERE project = $1", project)
            self._made.add(project)  # not committed yet: not cached
        if value is not None and project not in self._made:
            self._project_ids[project] = int(value)
        return int(value) if value is not None else None


class Params:
    """Positional parameters of one statement: `add(value)` returns its placeholder ($1, $2, …)."""

    def __init__(self, *initial: Any) -> None:
        self.values: list[Any] = list(initial)

    def add(self, value: Any) -> str:
        self.values.append(value)
        return f"${len(self.values)}"
