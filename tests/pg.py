"""The PostgreSQL server the suite runs its storage tests on a second time: CTXKEEP_TEST_POSTGRES_URL (`.ci/run`
starts one and sets it). Each test gets a schema of its own (`?search_path=`), dropped afterwards.

Without the variable the PostgreSQL runs are skipped, saying so; with CTXKEEP_REQUIRE_POSTGRES=1 (CI) they fail.
"""

from __future__ import annotations

import asyncio
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

URL_VARIABLE = "CTXKEEP_TEST_POSTGRES_URL"
SKIP_REASON = (
    f"no PostgreSQL: {URL_VARIABLE} is not set (run .ci/postgres start DIR and export the URL it prints to "
    "run the storage tests on PostgreSQL too)"
)


def server_url() -> str | None:
    url = os.environ.get(URL_VARIABLE, "").strip()
    if url:
        return url
    if os.environ.get("CTXKEEP_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"{SKIP_REASON}; CTXKEEP_REQUIRE_POSTGRES=1 forbids skipping", pytrace=False)
    pytest.skip(SKIP_REASON)


async def _run(url: str, statement: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        await conn.execute("SET lock_timeout = '10s'")
        await conn.execute(statement)
    finally:
        await conn.close()


def with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}search_path={schema}"


@contextmanager
def fresh_schema() -> Iterator[str]:
    """A URL whose search_path is a new, empty schema (dropped on exit)."""
    url = server_url()
    assert url is not None
    schema = f"t_{secrets.token_hex(6)}"
    asyncio.run(_run(url, f"CREATE SCHEMA {schema}"))
    try:
        yield with_schema(url, schema)
    finally:
        try:
            asyncio.run(_run(url, f"DROP SCHEMA {schema} CASCADE"))
        except Exception:  # a test left a connection inside a transaction: the schema stays, the run goes on
            pass
