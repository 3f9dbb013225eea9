"""The SQLite file: permissions, pragmas, migrations, refusals, immutability, tamper evidence."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import anyio
import pytest

from ctxkeep.errors import DatabaseUnavailable, SchemaTooNew
from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.storage import Store, open_store
from ctxkeep.storage.sqlite.migrations import LATEST
from ctxkeep.tools.checkpoint.versions import checkpoint_save, verify_chain
from ctxkeep.tools.scope import Scope
from tests.storage.full_disk import limit_pages

pytestmark = pytest.mark.anyio


async def save(scope: Scope, goal: str = "g", **fields: object) -> None:
    await checkpoint_save(scope, CheckpointSaveRequest(task_id="t", state=TaskState(goal=goal, **fields)))  # type: ignore[arg-type]


async def test_the_file_and_its_wal_are_private(scope: Scope, db_path: Path) -> None:
    await save(scope)
    for path in (db_path, db_path.with_name(db_path.name + "-wal")):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path


async def test_pragmas_are_set(store: Store, db_path: Path) -> None:
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()
    async with store.write() as raw:
        values = {}
        for pragma in ("foreign_keys", "secure_delete", "busy_timeout"):
            cursor = await raw.execute(f"PRAGMA {pragma}")
            values[pragma] = (await cursor.fetchone())[0]
    assert values == {"foreign_keys": 1, "secure_delete": 1, "busy_timeout": 5000}


async def test_migrations_are_recorded_and_reopening_is_a_no_op(store: Store, db_path: Path) -> None:
    assert await store.schema_version() == LATEST
    again = await open_store(db_path)
    try:
        assert await again.schema_version() == LATEST
    finally:
        await again.close()


async def test_a_newer_schema_is_refused(db_path: Path) -> None:
    await (await open_store(db_path)).close()  # create the file at the current schema
    conn = sqlite3.connect(db_path)
    conn.execute("INSERT INTO schema_migrations (version, name) VALUES (?, 'from the future')", (LATEST + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(SchemaTooNew, match="newer than this ctxkeep knows"):
        await open_store(db_path)


async def test_a_corrupt_file_is_named_in_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "broken.db"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(DatabaseUnavailable) as error:
        await open_store(path)
    assert str(path) in str(error.value) and "not a valid ctxkeep database" in str(error.value)


async def test_an_unwritable_location_is_a_clear_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(DatabaseUnavailable, match="cannot open"):
        await open_store(blocker / "sub" / "db.sqlite")


async def test_stored_versions_cannot_be_updated(scope: Scope, db_path: Path) -> None:
    await save(scope)
    conn = sqlite3.connect(db_path)
    with pytest.raises(sqlite3.IntegrityError, match="immutable"):
        conn.execute("UPDATE checkpoints SET state_json = '{}'")
    conn.close()


async def test_the_hash_chain_exposes_tampering(scope: Scope, db_path: Path) -> None:
    await save(scope, pending=["a"])
    await save(scope, pending=["a", "b"])
    assert await verify_chain(scope, "t") == []
    conn = sqlite3.connect(db_path)
    conn.execute("DROP TRIGGER checkpoints_are_immutable")
    conn.execute("UPDATE checkpoints SET state_json = replace(state_json, '\"b\"', '\"c\"') WHERE version = 2")
    conn.commit()
    conn.close()
    assert await verify_chain(scope, "t") == ["version 2 does not match its hash chain"]


async def test_a_failed_write_rolls_back_whole(scope: Scope, store: Store) -> None:
    await save(scope)
    with pytest.raises(RuntimeError):
        async with store.write() as conn:
            await conn.execute("UPDATE tasks SET latest_version = 99")
            raise RuntimeError("crash inside the transaction")
    async with store.snapshot() as tx:
        assert await tx.checkpoints.latest_version("/projects/alpha", "t") == 1


async def test_a_full_disk_is_a_clear_error_and_the_next_write_works(scope: Scope, store: Store) -> None:
    await save(scope)
    await limit_pages(store, 1)
    with pytest.raises(DatabaseUnavailable, match="disk is full"):
        await save(scope, extra={"blob": "x" * 150_000})
    await limit_pages(store, None)
    await save(scope, pending=["after the disk had space again"])
    async with store.snapshot() as tx:
        assert await tx.checkpoints.latest_version("/projects/alpha", "t") == 2


async def test_a_cancelled_transaction_rolls_back_and_frees_the_file(scope: Scope, store: Store, db_path: Path) -> None:
    await save(scope)
    with anyio.move_on_after(0.05):
        async with store.write() as conn:
            await conn.execute("UPDATE tasks SET latest_version = 99")
            await anyio.sleep(10)  # cancelled here, mid-transaction
    other = sqlite3.connect(db_path, timeout=1, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # the write lock was released
    other.execute("ROLLBACK")
    other.close()
    await save(scope, pending=["next"])
    async with store.snapshot() as tx:
        assert await tx.checkpoints.latest_version("/projects/alpha", "t") == 2


async def test_a_lock_held_past_busy_timeout_is_a_clear_error_and_the_next_call_works(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from mcp import Client

    from ctxkeep.server import build_server
    from ctxkeep.settings import Settings
    from tests.conftest import PROJECT, tool_text

    async with Client(build_server(Settings(db_path=db_path, project=PROJECT, busy_timeout_ms=100))) as client:
        assert not (await client.call_tool("checkpoint_save", {"task_id": "t", "state": {"goal": "g"}})).is_error
        holder = sqlite3.connect(db_path, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")  # another process writing for longer than busy_timeout
        try:
            blocked = await client.call_tool(
                "checkpoint_save", {"task_id": "t", "state": {"goal": "g", "pending": ["p"]}, "expected_version": 1}
            )
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert blocked.is_error and str(db_path) in tool_text(blocked) and "retry shortly" in tool_text(blocked)
        waited = [
            r.getMessage()
            for r in caplog.records
            if r.levelno == logging.WARNING and "gave up waiting" in r.getMessage()
        ]
        assert waited and str(db_path) in waited[0], waited  # the busy wait is logged, naming the file
        saved = await client.call_tool(
            "checkpoint_save", {"task_id": "t", "state": {"goal": "g", "pending": ["p"]}, "expected_version": 1}
        )
        assert saved.structured_content["version"] == 2  # nothing of the blocked call was stored; the retry works
