"""What a database holds, read around ctxkeep, for the tests that check what was (or was not) stored: the same
question asked of an SQLite file (through sqlite3) or of a PostgreSQL schema (through asyncpg).

Index tables have backend names; ask for them as EVIDENCE_INDEX and MEMORY_INDEX.
"""

from __future__ import annotations

import asyncio
import sqlite3
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

EVIDENCE_INDEX, MEMORY_INDEX = "<evidence index>", "<memory index>"
_SQLITE_INDEX = {EVIDENCE_INDEX: "evidence_fts_*_data", MEMORY_INDEX: "memory_fts_*_data"}
_PG_INDEX = {EVIDENCE_INDEX: "evidence_terms", MEMORY_INDEX: "memory_terms"}


def is_postgres(location: Path | str) -> bool:
    return str(location).startswith(("postgresql://", "postgres://"))


async def _fetch(url: str, queries: list[str]) -> list[list[tuple[Any, ...]]]:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        return [[tuple(row) for row in await conn.fetch(query)] for query in queries]
    finally:
        await conn.close()


def _pg_fetch(url: str, queries: list[str]) -> list[list[tuple[Any, ...]]]:
    """The rows of each query, on a thread of its own (so async tests can call it inside their event loop)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, _fetch(url, queries)).result()


def query(location: Path | str, sql: str) -> list[tuple[Any, ...]]:
    """One read-only query's rows, on either backend (write it in SQL both accept)."""
    if is_postgres(location):
        return _pg_fetch(str(location), [sql])[0]
    with sqlite3.connect(f"file:{location}?mode=ro", uri=True) as conn:
        return conn.execute(sql).fetchall()


def stored(location: Path | str, tables: list[str]) -> tuple[list[tuple[Any, ...]], ...]:
    """Every row of each table (EVIDENCE_INDEX, MEMORY_INDEX: the project indexes), in a stable order."""
    if is_postgres(location):
        names = [_PG_INDEX.get(table, table) for table in tables]
        return tuple(_pg_fetch(str(location), [f"SELECT * FROM {name} ORDER BY 1, 2, 3" for name in names]))
    out: list[list[tuple[Any, ...]]] = []
    with sqlite3.connect(location) as conn:
        for table in tables:
            if table in _SQLITE_INDEX:
                found = [
                    row[0]
                    for row in conn.execute(
                        "SELECT name FROM sqlite_master WHERE name GLOB ? ORDER BY name", (_SQLITE_INDEX[table],)
                    )
                ]
                assert found, f"no {table} in {location}"
                out += [conn.execute(f'SELECT * FROM "{name}" ORDER BY 1, 2').fetchall() for name in found]
            else:
                out.append(conn.execute(f'SELECT * FROM "{table}" ORDER BY 1, 2').fetchall())
    return tuple(out)


def _streams(raw: bytes) -> list[bytes]:
    """Every zlib stream in `raw`, decompressed (fed in small pieces, so one cut by a page boundary still yields what
    came before the cut)."""
    streams: list[bytes] = []
    start = raw.find(b"\x78\x9c")
    while start != -1:
        inflate, out = zlib.decompressobj(), []
        try:
            for offset in range(start, len(raw), 256):
                out.append(inflate.decompress(raw[offset : offset + 256]))
                if inflate.eof:
                    break
        except zlib.error:
            pass
        if sum(map(len, out)) >= 8:
            streams.append(b"".join(out))
        start = raw.find(b"\x78\x9c", start + 1)
    return streams


def _pg_bytes(url: str) -> bytes:
    """Every value of every table of the schema: text as UTF-8, bytea as stored."""
    [tables] = _pg_fetch(url, ["SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"])
    rows = _pg_fetch(url, [f"SELECT * FROM {name}" for (name,) in tables])
    parts = [
        value if isinstance(value, bytes) else str(value).encode("utf-8")
        for table in rows
        for row in table
        for value in row
        if value is not None
    ]
    return b"\0".join(parts)


def database_bytes(location: Path | str) -> bytes:
    """What the database holds as bytes, followed by every zlib stream in them, decompressed (evidence content is
    stored compressed, so a plain byte search would miss a secret in clear text). SQLite: the raw bytes of the file
    and its WAL. PostgreSQL: every value of every table of the schema (the files under its data directory are the
    server's; tests/storage/test_postgres_forget.py reads those)."""
    if is_postgres(location):
        raw = _pg_bytes(str(location))
    else:
        path = Path(location)
        wal = path.with_name(path.name + "-wal")
        raw = path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")
    return raw + b"\0".join(_streams(raw))
