"""The SQLite store's snapshots run on their own reader connection, on the caller's thread: no hand-off to aiosqlite's
thread per query, the same committed state throughout one snapshot, a write transaction of the same process free to
commit beside it, a file another process holds for writing still readable, and no write through a snapshot. A write
runs on the caller's thread too while the file's write lock is free, and waits on aiosqlite's thread, without
blocking the event loop, while another process holds it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import aiosqlite
import anyio
import pytest

from ctxkeep.errors import DatabaseUnavailable
from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.storage import SearchFilter, WorkingSetRow, open_store
from ctxkeep.tools.checkpoint import checkpoint_save
from ctxkeep.tools.scope import Scope

pytestmark = pytest.mark.anyio


async def _save(scope: Scope, step: str) -> None:
    await checkpoint_save(scope, CheckpointSaveRequest(task_id="t", state=TaskState(goal="g", next_action=step)))


def _working_set(focus: str) -> WorkingSetRow:
    return WorkingSetRow("t", focus, "{}", "[]", "null", "2026-01-01T00:00:00Z", "[]")


def _count_hand_offs(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The functions handed to aiosqlite's thread from now on."""
    handed: list[object] = []
    execute = aiosqlite.Connection._execute

    async def counted(self: aiosqlite.Connection, fn: object, *args: object, **kwargs: object) -> object:
        handed.append(fn)
        return await execute(self, fn, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    return handed


async def test_a_snapshot_and_a_write_with_the_lock_free_make_no_hand_off_to_aiosqlites_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await open_store(tmp_path / "s.db")
    scope = Scope(store, "/p")
    try:
        await _save(scope, "g")
        handed = _count_hand_offs(monkeypatch)
        async with store.snapshot() as tx:
            assert await tx.checkpoints.latest_version("/p", "t") == 1
            assert await tx.evidence.search("/p", ["missing"], SearchFilter(None, None, [], None, None), 10) == []
        await _save(scope, "g2")
        assert handed == []
        async with store.snapshot() as tx:
            assert await tx.checkpoints.latest_version("/p", "t") == 2
    finally:
        await store.close()


async def test_a_write_waits_on_aiosqlites_thread_while_another_process_holds_the_lock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "s.db"
    store = await open_store(db, busy_timeout_ms=10_000)
    scope = Scope(store, "/p")
    other = sqlite3.connect(db, isolation_level=None, check_same_thread=False)
    try:
        await _save(scope, "g")
        handed = _count_hand_offs(monkeypatch)
        other.execute("BEGIN IMMEDIATE")  # another writer holds the write lock (as a hook does while it stores)
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await anyio.sleep(0.01)

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(tick)
            with anyio.fail_after(5):
                async with anyio.create_task_group() as writing:
                    writing.start_soon(_save, scope, "g2")
                    await anyio.sleep(0.3)
                    assert handed  # the write is waiting on aiosqlite's thread
                    other.execute("ROLLBACK")
            tasks.cancel_scope.cancel()
        assert ticks >= 10  # the loop kept running while the write waited
        async with store.snapshot() as tx:
            assert await tx.checkpoints.latest_version("/p", "t") == 2
    finally:
        if other.in_transaction:
            other.execute("ROLLBACK")
        other.close()
        await store.close()


async def test_a_snapshot_sees_one_committed_state_while_the_same_process_commits_beside_it(tmp_path: Path) -> None:
    store = await open_store(tmp_path / "s.db")
    try:
        async with store.transaction() as tx:
            await tx.working_sets.put("/p", _working_set("before"))
        async with store.snapshot() as tx:
            assert (await tx.working_sets.get("/p", "t")).focus_key == "before"  # type: ignore[union-attr]
            with anyio.fail_after(10):  # the write does not wait for the snapshot to end
                async with store.transaction() as writing:
                    await writing.working_sets.put("/p", _working_set("after"))
            assert (await tx.working_sets.get("/p", "t")).focus_key == "before"  # type: ignore[union-attr]
        async with store.snapshot() as tx:
            assert (await tx.working_sets.get("/p", "t")).focus_key == "after"  # type: ignore[union-attr]
    finally:
        await store.close()


async def test_a_snapshot_reads_while_another_process_holds_the_file_for_writing(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = await open_store(db, busy_timeout_ms=10_000)
    scope = Scope(store, "/p")
    other = sqlite3.connect(db, isolation_level=None)
    try:
        await _save(scope, "g")
        other.execute("BEGIN IMMEDIATE")  # another writer holds the write lock (as a hook does while it stores)
        with anyio.fail_after(2):  # far below the busy timeout: a WAL reader does not wait for it
            async with store.snapshot() as tx:
                assert await tx.checkpoints.latest_version("/p", "t") == 1
    finally:
        other.execute("ROLLBACK")
        other.close()
        await store.close()


async def test_a_write_through_a_snapshot_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    store = await open_store(tmp_path / "s.db")
    try:
        with pytest.raises(DatabaseUnavailable):
            async with store.snapshot() as tx:
                await tx.working_sets.put("/p", _working_set("k"))
        async with store.snapshot() as tx:
            assert await tx.working_sets.get("/p", "t") is None
        async with store.transaction() as tx:  # the store still writes, and reads what it wrote
            await tx.working_sets.put("/p", _working_set("k"))
        async with store.snapshot() as tx:
            assert await tx.working_sets.get("/p", "t") is not None
    finally:
        await store.close()
