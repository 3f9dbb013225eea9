"""One opener and migration runner for every SQLite connection (`storage/sqlite/opener.py`): the hooks' fast path
and the Store open a file the same way: the same checks, pragmas and migrations, the foreign-key check included."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import anyio
import pytest

from ctxkeep.errors import DatabaseUnavailable
from ctxkeep.storage import LATEST_SCHEMA, open_store
from ctxkeep.storage.hook_store import open_hot_session
from tests.paths import TESTS

OLD = TESTS / "fixtures" / "schema6.db"  # a file ctxkeep really wrote at schema 6


def _schema(path: Path) -> list[tuple[str, str, str]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()


def _versions(path: Path) -> list[tuple[int, str]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT version, name FROM schema_migrations ORDER BY version").fetchall()


async def _open_store(path: Path) -> None:
    await (await open_store(path)).close()


def test_the_hooks_and_the_store_migrate_an_old_file_to_the_same_schema(tmp_path: Path) -> None:
    by_hook, by_store = tmp_path / "hook.db", tmp_path / "store.db"
    shutil.copy(OLD, by_hook)
    shutil.copy(OLD, by_store)
    open_hot_session(by_hook, "/p", "s").close()
    assert _versions(by_hook)[-1][0] == LATEST_SCHEMA
    anyio.run(_open_store, by_hook)  # the index work owed after the migrations: the Store's, at its next open
    anyio.run(_open_store, by_store)
    assert _schema(by_hook) == _schema(by_store)
    assert [v for v, _ in _versions(by_hook)] == [v for v, _ in _versions(by_store)]


def test_a_hook_connection_has_the_stores_pragmas(tmp_path: Path) -> None:
    with closing(open_hot_session(tmp_path / "ctxkeep.db", "/p", "s")) as session:
        raw = session._conn  # the session's own connection, as the hook uses it
        values = {
            p: raw.execute(f"PRAGMA {p}").fetchone()[0] for p in ("foreign_keys", "secure_delete", "journal_mode")
        }
    assert values == {"foreign_keys": 1, "secure_delete": 1, "journal_mode": "wal"}


@pytest.mark.parametrize("opener", ["hook", "store"])
def test_a_migration_that_would_break_a_reference_is_refused_by_either_opener(tmp_path: Path, opener: str) -> None:
    path = tmp_path / "old.db"
    shutil.copy(OLD, path)
    with closing(sqlite3.connect(path)) as conn:
        conn.execute("DELETE FROM tasks WHERE task_id = (SELECT MIN(task_id) FROM checkpoints)")  # (keys are off)
        conn.commit()
    with pytest.raises(DatabaseUnavailable, match="would break a reference between tables; nothing was changed"):
        if opener == "hook":
            open_hot_session(path, "/p", "s").close()
        else:
            anyio.run(_open_store, path)
    assert max(version for version, _ in _versions(path)) == 7  # the migrations before it stand, it does not
