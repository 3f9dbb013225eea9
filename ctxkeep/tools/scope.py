"""The scope every capability runs in: an open Store, the project key, and a clock."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ctxkeep.errors import CtxkeepError
from ctxkeep.models.common import DEFAULT_TTL_DAYS
from ctxkeep.settings import Settings
from ctxkeep.storage import Store, open_store


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Scope:
    """Where a tool call reads and writes: one database, one project; `clock` is injectable for tests;
    `memory_ttl_days` gives each memory kind's default lifetime (None: no expiry); `client_session` the client session that
    started this server, when known."""

    store: Store
    project: str
    clock: Callable[[], datetime] = field(default=utc_now)
    memory_ttl_days: Mapping[str, int | None] = field(default_factory=lambda: dict(DEFAULT_TTL_DAYS))
    client_session: str | None = None  # the client session (Claude Code's) this server runs for, when it says
    user: str | None = (
        None  # who writes (a shared server's token user, None locally): recorded in each checkpoint version
    )
    spool: Store | None = None  # with a PostgreSQL store, the hooks' local spool (their offloads are taken in from it)
    local_files: bool = True  # False for a shared server's remote user: no tool reads a file where the server runs


@asynccontextmanager
async def open_scope(
    settings: Settings, spool_failed: Callable[[CtxkeepError], None] | None = None
) -> AsyncIterator[Scope]:
    """The settings' database opened (and closed afterwards) as a scope, for the server, the CLI and the hooks'
    worker. With `spool_failed`, a hooks' spool that cannot be opened is reported to it and the scope has none (the
    offloads wait there); without it, that failure is raised like the database's."""
    store = await open_store(settings.location, settings.busy_timeout_ms, settings.db_timeout_ms)
    try:
        spool = await open_spool(settings)
    except CtxkeepError as exc:
        if spool_failed is None:
            await store.close()
            raise
        spool_failed(exc)
        spool = None
    except BaseException:
        await store.close()
        raise
    try:
        yield Scope(
            store=store,
            project=settings.project,
            memory_ttl_days=settings.memory_ttl_days,
            client_session=settings.client_session,
            spool=spool,
        )
    finally:
        await store.close()
        if spool is not None:
            await spool.close()


async def open_spool(settings: Settings) -> Store | None:
    """With a PostgreSQL store, the hooks' local spool (created when absent, so offloads written later are found);
    None with an SQLite store, whose file the hooks write directly."""
    path = settings.spool_path
    return await open_store(path, settings.busy_timeout_ms) if path is not None else None
