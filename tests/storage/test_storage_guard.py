"""The file under the server: deleted, replaced, read-only, foreign, full, too open; every case names what is wrong
and never acknowledges a write that cannot be found again (issue 14: 1, 23, 24)."""

from __future__ import annotations

import hashlib
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ctxkeep.errors import DatabaseUnavailable
from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.storage import LATEST_SCHEMA, Store, open_store
from ctxkeep.storage.sqlite.migrations import LATEST, MIGRATIONS
from ctxkeep.tools.checkpoint.versions import checkpoint_load, checkpoint_save
from ctxkeep.tools.evidence.records import evidence_delete, evidence_put
from ctxkeep.tools.scope import Scope
from tests.conftest import PROJECT, stdio_params, tool_text
from tests.paths import TESTS
from tests.storage.full_disk import limit_pages

pytestmark = pytest.mark.anyio
ROOT = TESTS.parent
AS_ROOT = os.geteuid() == 0 and shutil.which("chattr") is not None


def test_the_interface_names_the_last_migration_and_they_are_numbered_in_order() -> None:
    assert [version for version, _, _ in MIGRATIONS] == list(range(1, len(MIGRATIONS) + 1))
    assert LATEST_SCHEMA == LATEST == MIGRATIONS[-1][0]


async def _save(client: Client, pending: list[str], expected: int) -> Any:
    return await client.call_tool(
        "checkpoint_save", {"task_id": "t", "state": {"goal": "g", "pending": pending}, "expected_version": expected}
    )


@pytest.mark.slow
async def test_a_deleted_database_refuses_writes_with_one_error_naming_the_file(db_path: Path) -> None:
    with anyio.fail_after(60):
        async with Client(stdio_params(db_path)) as client:
            assert not (await _save(client, ["a"], 0)).is_error
            db_path.unlink()
            refused = await _save(client, ["a", "b"], 1)
            assert refused.is_error and str(db_path) in tool_text(refused) and "deleted" in tool_text(refused), (
                tool_text(refused)
            )
            put = await client.call_tool("evidence_put", {"content": "stored where nobody finds it"})
            assert put.is_error and str(db_path) in tool_text(put)
    assert (
        not db_path.exists()
        or not sqlite3.connect(db_path).execute("SELECT name FROM sqlite_master WHERE name = 'evidence'").fetchall()
    )  # nothing was acknowledged into a new file


@pytest.mark.slow
async def test_a_replaced_database_refuses_writes_and_the_new_file_is_untouched(db_path: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.db"
    await (await open_store(other)).close()
    with anyio.fail_after(60):
        async with Client(stdio_params(db_path)) as client:
            assert not (await _save(client, ["a"], 0)).is_error
            os.replace(other, db_path)
            before = hashlib.sha256(db_path.read_bytes()).hexdigest()
            refused = await _save(client, ["a", "b"], 1)
            assert refused.is_error and str(db_path) in tool_text(refused) and "replaced" in tool_text(refused), (
                tool_text(refused)
            )
    assert hashlib.sha256(db_path.read_bytes()).hexdigest() == before
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM checkpoints").fetchone()[0] == 0


def _ctxkeep(*args: str, db: Path, prefix: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CTXKEEP_DB": str(db), "CTXKEEP_PROJECT": PROJECT}
    return subprocess.run(
        [*(prefix or []), sys.executable, "-m", "ctxkeep", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        cwd=ROOT,
    )


async def _make_task(db: Path) -> None:
    store = await open_store(db)
    try:
        await checkpoint_save(
            Scope(store, PROJECT), CheckpointSaveRequest(task_id="t", state=TaskState(goal="read me back"))
        )
    finally:
        await store.close()


@contextmanager
def _immutable(path: Path) -> Iterator[None]:
    subprocess.run(["chattr", "+i", str(path)], check=True)
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)


async def _reads_work_and_writes_name(db: Path, what: str) -> None:
    shown = _ctxkeep("show", "t", db=db)
    assert shown.returncode == 0 and "read me back" in shown.stdout, shown.stderr
    store = await open_store(db)
    try:
        scope = Scope(store, PROJECT)
        assert (await checkpoint_load(scope, "t")).state.goal == "read me back"
        with pytest.raises(DatabaseUnavailable) as refused:
            await checkpoint_save(
                scope, CheckpointSaveRequest(task_id="t", state=TaskState(goal="read me back", pending=["x"]))
            )
    finally:
        await store.close()
    assert f"{what} is read-only" in str(refused.value), str(refused.value)


@pytest.mark.skipif(not AS_ROOT, reason="needs root and chattr to make a file read-only for root")
async def test_a_read_only_file_serves_reads_and_names_the_file_on_writes(tmp_path: Path) -> None:
    db = tmp_path / "ro.db"
    await _make_task(db)
    with _immutable(db):
        await _reads_work_and_writes_name(db, str(db))


@pytest.mark.skipif(not AS_ROOT, reason="needs root and chattr to make a folder read-only for root")
async def test_a_read_only_folder_serves_reads_and_names_the_folder_on_writes(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "ctxkeep.db"
    await _make_task(db)
    with _immutable(folder):
        await _reads_work_and_writes_name(db, f"the folder {folder}")
    assert sorted(p.name for p in folder.iterdir()) == ["ctxkeep.db"]


@pytest.mark.slow
@pytest.mark.skipif(not AS_ROOT or shutil.which("unshare") is None, reason="needs root to mount a read-only bind")
async def test_a_read_only_mount_serves_reads_over_stdio_and_names_the_mount_on_writes(tmp_path: Path) -> None:
    folder = tmp_path / "mounted"
    folder.mkdir()
    db = folder / "ctxkeep.db"
    await _make_task(db)
    mount = f'mount --bind {folder} {folder} && mount -o remount,ro,bind {folder} && exec "$@"'
    params = StdioServerParameters(
        command="unshare",
        args=["-m", "sh", "-c", mount, "sh", sys.executable, "-m", "ctxkeep", "serve"],
        env={"CTXKEEP_DB": str(db), "CTXKEEP_PROJECT": PROJECT},
    )
    with anyio.fail_after(60):
        async with Client(params) as client:
            loaded = await client.call_tool("checkpoint_load", {"task_id": "t"})
            assert not loaded.is_error and "read me back" in tool_text(loaded), tool_text(loaded)
            refused = await _save(client, ["x"], 1)
    text = tool_text(refused)
    assert refused.is_error and f"the folder {folder} is read-only" in text and "read-only file system" in text, text


async def test_a_foreign_sqlite_file_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    foreign = tmp_path / "app.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
        conn.execute("INSERT INTO users (name) VALUES ('ada')")
    foreign.chmod(0o644)  # another program's choice, left alone too
    before = foreign.read_bytes()
    with pytest.raises(DatabaseUnavailable) as refused:
        await open_store(foreign)
    assert (
        str(foreign) in str(refused.value)
        and "not a ctxkeep database" in str(refused.value)
        and "users" in str(refused.value)
    )
    assert (
        foreign.read_bytes() == before
        and sorted(p.name for p in tmp_path.iterdir()) == ["app.db"]
        and _mode(foreign) == 0o644
    )
    listed = _ctxkeep("tasks", db=foreign)
    assert listed.returncode == 1 and "not a ctxkeep database" in listed.stderr and foreign.read_bytes() == before


async def test_an_empty_file_and_an_old_ctxkeep_file_are_accepted(tmp_path: Path) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    await (await open_store(empty)).close()
    old = tmp_path / "old.db"
    shutil.copy(ROOT / "tests" / "fixtures" / "schema6.db", old)
    store = await open_store(old)
    try:
        assert await store.schema_version() == LATEST
    finally:
        await store.close()


async def test_a_full_database_names_what_still_frees_space_and_those_actions_work(store: Store) -> None:
    scope = Scope(store, PROJECT)
    big = (await evidence_put(scope, [EvidenceItem(content=os.urandom(120_000).hex(), redact=False)])).refs[0]
    await limit_pages(store, 2)
    with pytest.raises(DatabaseUnavailable) as full:
        await evidence_put(scope, [EvidenceItem(content=os.urandom(60_000).hex(), redact=False)])
    message = str(full.value)
    assert (
        "full" in message and "ctxkeep gc" in message and "evidence_delete" in message and "memory_forget" in message
    ), message
    await evidence_delete(scope, big)  # a delete still works on a full database and frees pages
    await evidence_put(scope, [EvidenceItem(content=os.urandom(60_000).hex(), redact=False)])


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_an_existing_world_readable_database_is_tightened_with_its_wal(tmp_path: Path) -> None:
    db = tmp_path / "open.db"
    await _make_task(db)
    db.chmod(0o644)
    store = await open_store(db)
    try:
        await checkpoint_save(Scope(store, PROJECT), CheckpointSaveRequest(task_id="u", state=TaskState(goal="g")))
        for path in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
            assert _mode(path) == 0o600, (path, oct(_mode(path)))
    finally:
        await store.close()


def test_new_folders_are_private_under_umask_000(tmp_path: Path) -> None:
    db = tmp_path / "a" / "b" / "ctxkeep.db"
    code = (
        "import os, anyio; os.umask(0); from pathlib import Path; from ctxkeep.storage import open_store\n"
        f"async def main():\n    await (await open_store(Path({str(db)!r}))).close()\nanyio.run(main)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert (_mode(tmp_path / "a"), _mode(tmp_path / "a" / "b"), _mode(db)) == (0o700, 0o700, 0o600)


async def test_doctor_warns_about_a_folder_others_can_write(tmp_path: Path) -> None:
    folder = tmp_path / "shared"
    folder.mkdir()
    db = folder / "ctxkeep.db"
    await _make_task(db)
    folder.chmod(0o777)
    doctor = _ctxkeep("doctor", db=db)
    assert f"[warn] {folder}" in doctor.stdout and "others can replace" in doctor.stdout, doctor.stdout
