"""The shared table modules' statements (`ctxkeep.storage.sql`) on one PostgreSQL transaction: their `?`
placeholders numbered ($1, $2, …), the transaction begun by the first statement."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ctxkeep.storage.postgres.maintenance import Maintenance
from ctxkeep.storage.postgres.session import Session
from ctxkeep.storage.sql.db import Row, numbered


def changed(status: str) -> int:
    """The rows a command changed, from its status ("INSERT 0 1", "UPDATE 3", "DELETE 0")."""
    last = status.rsplit(" ", 1)[-1]
    return int(last) if last.isdigit() else 0


class PostgresDb:
    """`sql.db.Db` over one transaction's session; `owe_vacuum` records the rewrite a delete owes (`maintenance`)."""

    def __init__(self, session: Session, maintenance: Maintenance) -> None:
        self._s = session
        self._maintenance = maintenance

    async def execute(self, sql: str, *args: Any) -> int:
        return changed(await (await self._s.begun()).execute(numbered(sql), *args))

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        await (await self._s.begun()).executemany(numbered(sql), rows)

    async def fetch(self, sql: str, *args: Any) -> list[Row]:
        return list(await (await self._s.begun()).fetch(numbered(sql), *args))

    async def fetchrow(self, sql: str, *args: Any) -> Row | None:
        return await (await self._s.begun()).fetchrow(numbered(sql), *args)

    async def owe_vacuum(self, *tables: str) -> None:
        await self._maintenance.owe_vacuum(*tables)
