"""Forget down to the stored bytes on PostgreSQL: after memory_forget or evidence_delete, the text is in no file of
the database (its tables, TOAST, indexes), read from the server's data directory after a CHECKPOINT; why a plain
VACUUM is not enough; and a rewrite kept from running by another session's lock stays owed until the next write.

PostgreSQL's write-ahead log (pg_wal) still holds the rows until its segments are recycled: not checked here, and
said in docs/storage.md. These tests read every file of the database and depend on which snapshots are open in it,
so they run on a PostgreSQL server of their own (tests/pg_server.py), never the shared one.
"""

from __future__ import annotations

import secrets
import zlib
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import asyncpg
import pytest

from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.models.memory import MemoryForgetRequest, MemoryWriteRequest
from ctxkeep.storage import open_store
from ctxkeep.tools.evidence.records import evidence_delete, evidence_put
from ctxkeep.tools.memory.forget import memory_forget
from ctxkeep.tools.memory.records import memory_write
from ctxkeep.tools.scope import Scope
from tests.conftest import PROJECT
from tests.db_dump import _streams
from tests.pg import with_schema
from tests.pg_server import OwnPostgres, own_postgres

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def own() -> Iterator[OwnPostgres]:
    with own_postgres() as server:
        yield server


@contextmanager
def _schema(server: OwnPostgres) -> Iterator[str]:
    import asyncio

    name = f"t_{secrets.token_hex(6)}"

    async def run(statement: str) -> None:
        conn = await asyncpg.connect(server.url)
        try:
            await conn.execute(statement)
        finally:
            await conn.close()

    asyncio.run(run(f"CREATE SCHEMA {name}"))
    try:
        yield with_schema(server.url, name)
    finally:
        asyncio.run(run(f"DROP SCHEMA {name} CASCADE"))


@pytest.fixture
def pg_url(own: OwnPostgres) -> Iterator[str]:
    with _schema(own) as url:
        yield url


@pytest.fixture
async def scope(pg_url: str) -> AsyncIterator[Scope]:
    store = await open_store(pg_url, busy_timeout_ms=300)
    yield Scope(store, PROJECT)
    await store.close()


@pytest.fixture
def secret() -> str:
    return f"Deliver every parcel to Zanzibar Quay 77, code {secrets.token_hex(8)}"


async def database_files(url: str) -> bytes:
    """Every file of the test's database (all its relations: tables, TOAST, indexes) after a CHECKPOINT, with the
    zlib streams in them decompressed; needs a role that may CHECKPOINT and read data_directory, and read access to
    the files (CI runs as root beside the server's own user)."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("CHECKPOINT")
        folder = (
            Path(await conn.fetchval("SHOW data_directory"))
            / "base"
            / str(await conn.fetchval("SELECT oid FROM pg_database WHERE datname = current_database()"))
        )
    except asyncpg.InsufficientPrivilegeError as exc:
        _cannot(f"the test role may not CHECKPOINT or read data_directory: {exc}")
    finally:
        await conn.close()
    try:
        raw = b"".join(path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file())
    except PermissionError as exc:
        _cannot(f"this user cannot read the server's files ({exc})")
    return raw + b"\0".join(_streams(raw))


def _cannot(why: str) -> None:
    import os

    if os.environ.get("CTXKEEP_REQUIRE_POSTGRES") == "1":
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


def held(data: bytes, secret: str) -> bool:
    return any(needle in data for needle in (secret.encode(), zlib.compress(secret.encode(), 6)))


async def remember(scope: Scope, secret: str, key: str = "delivery address") -> None:
    await memory_write(
        scope,
        MemoryWriteRequest(
            kind="user_preference", key=key, content=secret, explicit_confirmation=True, source_message_id="msg-3"
        ),
    )


async def test_a_plain_vacuum_can_leave_a_deleted_rows_bytes_in_its_page(pg_url: str, secret: str) -> None:
    """Why forget rewrites tables: PostgreSQL compacts a page but does not zero the space it frees."""
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute("CREATE TABLE scratch (id int PRIMARY KEY, body text)")
        await conn.executemany(
            "INSERT INTO scratch VALUES ($1, $2)", [(i, f"row {i} " * 20) for i in range(50)] + [(50, secret)]
        )
        await conn.execute("DELETE FROM scratch WHERE id = 50")  # the last row in, the lowest address on its page
        await conn.execute("VACUUM scratch")
    finally:
        await conn.close()
    assert held(await database_files(pg_url), secret)


async def test_a_forgotten_memory_is_in_no_file_of_the_database(scope: Scope, pg_url: str, secret: str) -> None:
    for i in range(3):
        await remember(scope, f"an unrelated note {i}", key=f"other {i}")
    await remember(scope, secret)  # the last row in: where a plain VACUUM would leave its bytes
    assert held(await database_files(pg_url), secret)  # the scan can see it
    gone = await memory_forget(scope, MemoryForgetRequest(key="delivery address"))
    assert gone.wal_cleared is True
    assert not held(await database_files(pg_url), secret)


async def test_a_deleted_evidence_record_is_in_no_file_of_the_database(scope: Scope, pg_url: str, secret: str) -> None:
    await evidence_put(scope, [EvidenceItem(content=f"an unrelated note {i}") for i in range(3)])
    ref = (await evidence_put(scope, [EvidenceItem(content=secret, redact=False, title=secret)])).refs[0]
    assert held(await database_files(pg_url), secret)
    deleted = await evidence_delete(scope, ref)
    assert deleted.deleted and deleted.wal_truncated is True
    assert not held(await database_files(pg_url), secret)


async def test_a_rewrite_a_lock_kept_from_running_is_owed_and_the_next_write_finishes_it(
    scope: Scope, pg_url: str, secret: str
) -> None:
    await remember(scope, secret)
    reader = await asyncpg.connect(pg_url)
    transaction = reader.transaction()
    await transaction.start()
    await reader.fetch("SELECT count(*) FROM memories")  # another session reading: VACUUM FULL must wait for it
    try:
        gone = await memory_forget(scope, MemoryForgetRequest(key="delivery address"))
        assert gone.wal_cleared is False
        owed = await reader.fetch("SELECT name FROM store_meta WHERE name LIKE 'owed:%' ORDER BY name")
        assert any(row[0].startswith("owed:vacuum:memories:") for row in owed), owed  # one debt row per delete
    finally:
        await transaction.rollback()
        await reader.close()
    assert held(await database_files(pg_url), secret)  # nothing has run since the reader let go
    await remember(scope, "an unrelated note", key="other")  # the next write finishes what was owed
    assert not held(await database_files(pg_url), secret)
    conn = await asyncpg.connect(pg_url)
    try:
        assert await conn.fetch("SELECT name FROM store_meta WHERE name LIKE 'owed:%'") == []
    finally:
        await conn.close()


async def test_the_next_open_finishes_a_rewrite_owed_across_a_restart(pg_url: str, secret: str) -> None:
    store = await open_store(pg_url, busy_timeout_ms=300)
    reader = await asyncpg.connect(pg_url)
    try:
        await remember(Scope(store, PROJECT), secret)
        transaction = reader.transaction()
        await transaction.start()
        await reader.fetch("SELECT count(*) FROM memories")
        assert (
            await memory_forget(Scope(store, PROJECT), MemoryForgetRequest(key="delivery address"))
        ).wal_cleared is False
        await store.close()
        await transaction.rollback()
    finally:
        await reader.close()
    assert held(await database_files(pg_url), secret)
    reopened = await open_store(pg_url)
    try:
        assert not held(await database_files(pg_url), secret)
    finally:
        await reopened.close()


async def test_an_evidence_delete_rewrites_the_records_and_blobs_but_only_vacuums_the_textless_postings(
    scope: Scope, pg_url: str
) -> None:
    """Rewriting the postings (keyed hashes and counts, no text) would stop every search for seconds on a large store."""
    ref = (await evidence_put(scope, [EvidenceItem(content="a note to delete", redact=False)])).refs[0]
    files = (
        "SELECT relname, relfilenode FROM pg_class WHERE relnamespace = current_schema()::regnamespace "
        "AND relname IN ('evidence', 'blobs', 'evidence_terms') ORDER BY 1"
    )
    conn = await asyncpg.connect(pg_url)
    try:
        before = dict(await conn.fetch(files))
        assert (await evidence_delete(scope, ref)).wal_truncated is True
        after = dict(await conn.fetch(files))
        assert await conn.fetchval("SELECT count(*) FROM evidence_terms") == 0
    finally:
        await conn.close()
    assert after["evidence"] != before["evidence"] and after["blobs"] != before["blobs"]  # new files: rewritten
    assert after["evidence_terms"] == before["evidence_terms"]  # the same file, vacuumed in place


async def test_a_rewrite_waits_for_a_snapshot_older_than_the_delete_then_the_next_write_finishes_it(
    scope: Scope, pg_url: str, own: OwnPostgres, secret: str
) -> None:
    """VACUUM FULL copies the rows an older snapshot may still see: with one open (another program, another schema),
    the delete says the text is not gone yet, and the rewrite runs once that snapshot has ended."""
    ref = (await evidence_put(scope, [EvidenceItem(content=secret, redact=False, title=secret)])).refs[0]
    other = await asyncpg.connect(own.url)  # another program on the same database
    transaction = other.transaction(isolation="repeatable_read")
    await transaction.start()
    await other.fetchval("SELECT 1")  # its snapshot: taken before the delete
    try:
        deleted = await evidence_delete(scope, ref)
        assert deleted.deleted and deleted.wal_truncated is False  # not claimed gone while it is still in the files
        assert held(await database_files(pg_url), secret)
    finally:
        await transaction.rollback()
        await other.close()
    await evidence_put(scope, [EvidenceItem(content="the next write")])  # finishes what was owed
    assert not held(await database_files(pg_url), secret)
