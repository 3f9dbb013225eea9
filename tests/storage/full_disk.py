"""A full disk, simulated on a SQLite store: `max_page_count` is a setting of each connection, so it is set on every
connection the store writes through (aiosqlite's, and the one on the event loop's thread)."""

from __future__ import annotations

from ctxkeep.storage import Store
from ctxkeep.storage.sqlite.db import SqliteStore


async def limit_pages(store: Store, room: int | None) -> None:
    """At most `room` pages more than the file has now (None: the limit lifted), on every writing connection."""
    async with store.write() as conn:  # type: ignore[attr-defined]
        pages = (await (await conn.execute("PRAGMA page_count")).fetchone())[0]
        limit = 1_000_000 if room is None else pages + room
        await conn.execute(f"PRAGMA max_page_count = {limit}")
    assert isinstance(store, SqliteStore)
    local = store._loop_writer()
    assert local is not None
    await local.execute(f"PRAGMA max_page_count = {limit}")
