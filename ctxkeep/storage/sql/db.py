"""What a shared table module needs of a store: statements run on one transaction's connection, and a note of the
tables a deleted row's bytes must be rewritten out of (`owe_vacuum`)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from functools import lru_cache
from typing import Any, Protocol

_PLACEHOLDER = re.compile(r"\?")


class Row(Protocol):
    """One result row: a tuple (SQLite) or a record (PostgreSQL), read by position."""

    def __getitem__(self, index: int, /) -> Any: ...

    def __len__(self) -> int: ...

    def __iter__(self) -> Iterator[Any]: ...


class Db(Protocol):
    """One transaction's statements; SQL is written with `?` placeholders (the store translates its style)."""

    async def execute(self, sql: str, *args: Any) -> int:
        """Run one statement; how many rows it changed."""

    async def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None: ...

    async def fetch(self, sql: str, *args: Any) -> list[Row]: ...

    async def fetchrow(self, sql: str, *args: Any) -> Row | None: ...

    async def owe_vacuum(self, *tables: str) -> None:
        """The tables whose deleted or replaced rows must be rewritten out of the files after the transaction
        (PostgreSQL); nothing on SQLite, whose secure_delete zeroes freed pages as it frees them."""


@lru_cache(maxsize=1024)
def numbered(sql: str) -> str:
    """`?` placeholders as $1, $2, … (the shared SQL holds no `?` inside a literal or an operator)."""
    count = 0

    def number(_: re.Match[str]) -> str:
        nonlocal count
        count += 1
        return f"${count}"

    return _PLACEHOLDER.sub(number, sql)
