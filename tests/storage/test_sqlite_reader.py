"""The SQLite store's snapshots run on their own reader connection, on the caller's thread: no hand-off to aiosqlite's
thread per query, the same committed state throughout one snapshot, a write transaction of the same process free to
commit beside it, a file another process holds for writing still readable, and no write through a snapshot."""

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


async def test_a_snapshot_makes_no_hand_off_to_aiosqlites_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = await open_store(tmp_path / "s.db")
    scope = Scope(store, "/p")
    try:
        await _save(scope, "g")
        handed: list[object] = []
        execute = aiosqlite.Connection._execute

        async def counted(self: aiosqlite.Connection, fn: object, *args: object, **kwargs: object) -> object:
            handed.append(fn)
            return await execute(self, fn, *args, **kwargs)

        monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
        async with store.snapshot() as tx:
            assert await tx.checkpoints.latest_version("/p", "t") == 1
            assert await tx.evidence.search("/p", ["missing"], SearchFilter(None, None, [], None, None), 10) == []
        assert handed == []
        await _save(scope, "g2")  # writes still go through aiosqlite
        assert handed
    finally:
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
