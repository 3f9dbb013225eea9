"""Every error the PostgreSQL driver can raise, as the one DatabaseUnavailable a caller can act on.

asyncpg raises server errors (`PostgresError`: constraint, lock timeout, statement timeout, a backend terminated by an
operator, a server shutting down or starting), client errors (`InterfaceError`, `ConnectionDoesNotExistError` when
the connection died mid-call, `InternalClientError` when its protocol state broke, as after `pg_terminate_backend`),
socket errors (`OSError`: refused, reset, unreachable) and timeouts (`TimeoutError`: no answer within
CTXKEEP_DB_TIMEOUT_MS). Each becomes one message that names the database (never its password), says whether it is
unreachable, slow or busy, and what to do; `is_connection_lost` tells which ones mean the connection cannot be reused.
"""

from __future__ import annotations

import asyncio

import asyncpg

from ctxkeep.errors import DatabaseUnavailable

DRIVER_ERRORS: tuple[type[BaseException], ...] = (
    asyncpg.PostgresError,
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    OSError,
    TimeoutError,
    asyncio.TimeoutError,
)
RETRY = "ctxkeep tries again on the next call"
_LOST = (
    asyncpg.PostgresConnectionError,  # class 08: the connection failed or does not exist
    asyncpg.exceptions.AdminShutdownError,  # the backend was terminated (pg_terminate_backend, a fast shutdown)
    asyncpg.exceptions.CrashShutdownError,
    asyncpg.exceptions.CannotConnectNowError,  # starting up or shutting down
    asyncpg.InterfaceError,
    asyncpg.InternalClientError,
    OSError,
    TimeoutError,
    asyncio.TimeoutError,
)


def is_connection_lost(exc: BaseException) -> bool:
    """Whether the error leaves the connection unusable (lost, broken, or waiting on a server that does not answer)."""
    return isinstance(exc, _LOST)


def unavailable(exc: BaseException, where: str, busy_timeout_ms: int, timeout_ms: int) -> DatabaseUnavailable:
    """The message for a driver error; `where` is the database as shown (no password)."""
    seconds = f"{timeout_ms / 1000:g} s"
    if isinstance(exc, asyncpg.LockNotAvailableError):
        return DatabaseUnavailable(
            f"database {where} is busy: another writer held what this write needed (the same task's chain, or the "
            f"same row) longer than CTXKEEP_BUSY_TIMEOUT_MS ({busy_timeout_ms} ms); nothing was written; retry"
        )
    if isinstance(exc, asyncpg.DiskFullError):
        return DatabaseUnavailable(
            f"database {where}: the server's disk is full; nothing was written (free space on the PostgreSQL server, "
            "then retry)"
        )
    if isinstance(exc, asyncpg.QueryCanceledError):
        why = "did not finish a statement within" if "statement timeout" in str(exc) else "cancelled a statement after"
        return DatabaseUnavailable(
            f"database {where} is slow: it {why} CTXKEEP_DB_TIMEOUT_MS ({seconds}); nothing was written; retry, or "
            "raise CTXKEEP_DB_TIMEOUT_MS if the server is merely loaded"
        )
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return DatabaseUnavailable(
            f"database {where} did not answer within CTXKEEP_DB_TIMEOUT_MS ({seconds}): the server is hung, paused "
            f"or overloaded; nothing of this call was stored unless it was committing; {RETRY} (repeating a call "
            "stores nothing twice)"
        )
    if isinstance(exc, asyncpg.TooManyConnectionsError):
        return DatabaseUnavailable(
            f"database {where} refused a connection: too many clients are connected; retry shortly, or raise the "
            "server's max_connections"
        )
    if is_connection_lost(exc):
        detail = str(exc).strip().splitlines()[0][:200] if str(exc).strip() else ""
        return DatabaseUnavailable(
            f"database {where} is unreachable ({type(exc).__name__}{': ' + detail if detail else ''}): check that "
            f"the PostgreSQL server runs and accepts connections; nothing of this call was stored unless it was "
            f"committing; {RETRY} (repeating a call stores nothing twice)"
        )
    return DatabaseUnavailable(f"database {where}: {type(exc).__name__}: {exc}")
