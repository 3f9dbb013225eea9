"""A store opened on first use, and opened again on a later call when it could not be: for servers, which must start
and keep serving while their database is down (a stdio server started during a PostgreSQL restart serves once the
database is back, without a restart of its own). Calls while it cannot be opened fail with the opening's error,
trying again with a short backoff (`backoff`). Once open, the store's own recovery applies (PostgreSQL: the pool
replaces dead connections; the same backoff while the server cannot be reached)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio

from ctxkeep.errors import StorageError
from ctxkeep.storage.backoff import Backoff
from ctxkeep.db_location import shown_location
from ctxkeep.storage.backends import open_store
from ctxkeep.db_location import DEFAULT_DB_TIMEOUT_MS
from ctxkeep.storage.interface import Store, Tx, is_postgres


class OnDemandStore(Store):
    """`open_store(location, …)` deferred to the first call that needs it, repeated (with backoff) until it works."""

    def __init__(
        self, location: Path | str, busy_timeout_ms: int = 5_000, timeout_ms: int = DEFAULT_DB_TIMEOUT_MS
    ) -> None:
        self._where, self._busy, self._timeout = location, busy_timeout_ms, timeout_ms
        self.path = Path() if is_postgres(location) else Path(location)
        self.location = shown_location(location)
        self._store: Store | None = None
        self._opening = anyio.Lock()
        self._backoff = Backoff()

    async def opened(self) -> Store:
        """The open store, opening it now when it is not; raises the opening's StorageError (DatabaseUnavailable,
        SchemaTooNew), at once while the next attempt is not due."""
        if self._store is not None:
            return self._store
        async with self._opening:
            if self._store is None:
                self._backoff.check()
                try:
                    self._store = await open_store(self._where, self._busy, self._timeout)
                except StorageError as exc:
                    self._backoff.failed(exc)
                    raise
                self._backoff.succeeded()
            return self._store

    async def close(self) -> None:
        if self._store is not None:
            store, self._store = self._store, None
            await store.close()

    async def schema_version(self) -> int:
        return await (await self.opened()).schema_version()

    async def checkpoint_wal(self) -> bool:
        return await (await self.opened()).checkpoint_wal()

    def read_only(self) -> str | None:
        return self._store.read_only() if self._store is not None else None

    async def integrity_check(self) -> str:
        return await (await self.opened()).integrity_check()

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Tx]:
        async with (await self.opened()).transaction() as tx:
            yield tx

    @asynccontextmanager
    async def snapshot(self) -> AsyncIterator[Tx]:
        async with (await self.opened()).snapshot() as tx:
            yield tx
