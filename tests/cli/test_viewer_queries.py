"""The store's project-wide reads the journal command and the viewer use: journal entries of every task, the latest
working set of each task, and each session's last injection, newest first, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import pytest

from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.journal import ActionIntentRequest, ActionResultRequest
from ctxkeep.models.working_set import WorkingSetRequest
from ctxkeep.storage import Store
from ctxkeep.storage.hook_store import open_hot_session
from ctxkeep.tools.checkpoint import checkpoint_save
from ctxkeep.tools.journal import action_intent, action_result
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.working_set import build_working_set
from tests.conftest import PROJECT, procurement_state
from tests.db_dump import is_postgres

pytestmark = pytest.mark.anyio


async def _task(scope: Scope, task_id: str) -> None:
    await checkpoint_save(
        scope, CheckpointSaveRequest(task_id=task_id, state=TaskState.model_validate(procurement_state()))
    )


async def test_the_journal_of_every_task_newest_first_and_only_open_ones_on_request(scope: Scope) -> None:
    for task in ("alpha", "beta"):
        await _task(scope, task)
    for n, task in enumerate(["alpha", "beta", "alpha"]):
        await action_intent(
            scope,
            ActionIntentRequest(
                task_id=task, idempotency_key=f"{task}:mail:{n}", action="send mail", target="director"
            ),
        )
    await action_result(scope, ActionResultRequest(idempotency_key="beta:mail:1", status="succeeded"))
    entries = await _read(scope, lambda tx: tx.journal.recent(PROJECT, False, 10))
    assert [e.idempotency_key for e in entries] == ["alpha:mail:2", "beta:mail:1", "alpha:mail:0"]
    open_only = await _read(scope, lambda tx: tx.journal.recent(PROJECT, True, 10))
    assert [e.idempotency_key for e in open_only] == ["alpha:mail:2", "alpha:mail:0"]
    assert [e.idempotency_key for e in await _read(scope, lambda tx: tx.journal.recent(PROJECT, False, 1))] == [
        "alpha:mail:2"
    ]
    assert await _read(scope, lambda tx: tx.journal.recent("/another/project", False, 10)) == []


async def test_the_latest_working_set_of_each_task_newest_first(scope: Scope) -> None:
    for task in ("alpha", "beta"):
        await _task(scope, task)
        await build_working_set(scope, WorkingSetRequest(task_id=task, budget_tokens=1_000))
    await build_working_set(scope, WorkingSetRequest(task_id="alpha", budget_tokens=1_000, focus="freight"))
    rows = await _read(scope, lambda tx: tx.working_sets.recent(PROJECT, 10))
    assert [row.task_id for row in rows] == ["alpha", "beta"] and rows[0].focus_key == "freight"
    assert await _read(scope, lambda tx: tx.working_sets.recent("/another/project", 10)) == []


def _write_injections(location: Path | str) -> None:
    """Two sessions' hook state as the hooks leave it: s-old injected, then s-new; s-none had nothing to inject."""
    if not is_postgres(location):
        for session, at, text in (
            ("s-old", "2026-01-01T10:00:00Z", "# old view"),
            ("s-new", "2026-01-02T10:00:00Z", "# new view"),
            ("s-none", "2026-01-03T10:00:00Z", None),
        ):
            with closing(open_hot_session(Path(location), PROJECT, session)) as conn:
                conn.put_records([("prompt", "p1", "hello", at, "", "", "")])
                if text:
                    conn.set_hook_state(injection=text, injection_generation=1)
        return

    async def write() -> None:
        import asyncpg

        conn = await asyncpg.connect(str(location))
        try:
            for session, at, text in (
                ("s-old", "2026-01-01T10:00:00Z", "# old view"),
                ("s-new", "2026-01-02T10:00:00Z", "# new view"),
                ("s-none", "2026-01-03T10:00:00Z", None),
            ):
                await conn.execute(
                    "INSERT INTO session_records (project, session_id, kind, key, text, at) VALUES ($1, $2, "
                    "'prompt', 'p1', 'hello', $3)",
                    PROJECT,
                    session,
                    at,
                )
                await conn.execute(
                    "INSERT INTO session_hooks (project, session_id, generation, injection) VALUES ($1, $2, 1, $3)",
                    PROJECT,
                    session,
                    text,
                )
        finally:
            await conn.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, write()).result()


async def test_each_sessions_last_injection_the_most_recently_seen_first(db_path: Path, store: Store) -> None:
    _write_injections(db_path)
    scope = Scope(store=store, project=PROJECT)
    rows = await _read(scope, lambda tx: tx.sessions.injections(PROJECT, 10))
    assert [(r.session_id, r.text, r.task_id, r.seen_at) for r in rows] == [
        ("s-new", "# new view", None, "2026-01-02T10:00:00Z"),
        ("s-old", "# old view", None, "2026-01-01T10:00:00Z"),
    ]
    assert [r.session_id for r in await _read(scope, lambda tx: tx.sessions.injections(PROJECT, 1))] == ["s-new"]
    assert await _read(scope, lambda tx: tx.sessions.injections("/another/project", 10)) == []


async def _read(scope: Scope, query):  # type: ignore[no-untyped-def]
    async with scope.store.snapshot() as tx:
        return await query(tx)


def _write_session_logs(location: Path | str) -> None:
    """Three sessions as the hooks leave them: s-bound (bound to a task, two injections, an offload, a block), s-free
    (no checkpoint: one prompt, one injection) and s-quiet (one prompt and nothing shown)."""
    rows = [
        ("s-bound", "prompt", "p1", "fix the login test", "2026-01-01T10:00:00Z", "", "", ""),
        ("s-bound", "injected", "2026-01-01T10:01:00Z", "# view", "2026-01-01T10:01:00Z", "the view", "", ""),
        ("s-bound", "offloaded", "2026-01-01T10:02:00Z", "[shaped]", "2026-01-01T10:02:00Z", "shaped", "Bash", "ev_1"),
        ("s-bound", "blocked", "2026-01-01T10:03:00Z", "run the tests", "2026-01-01T10:03:00Z", "Stop", "", ""),
        ("s-bound", "injected", "2026-01-01T10:04:00Z", "# repair", "2026-01-01T10:04:00Z", "repair", "", ""),
        ("s-free", "prompt", "p1", "hello", "2026-01-02T10:00:00Z", "", "", ""),
        ("s-free", "injected", "2026-01-02T10:01:00Z", "# free view", "2026-01-02T10:01:00Z", "the view", "", ""),
        ("s-quiet", "prompt", "p1", "hi", "2025-12-31T10:00:00Z", "", "", ""),
    ]
    insert = "INSERT INTO session_records (project, session_id, kind, key, text, at, status, source, ref) VALUES ({})"
    bind = ("s-bound", "fix-login", 1, "/x.jsonl", "", "2026-01-01T10:05:00Z")
    if not is_postgres(location):
        import sqlite3

        with closing(open_hot_session(Path(location), PROJECT, "s-bound")):
            pass  # creates and migrates the file
        with closing(sqlite3.connect(location)) as conn, conn:
            conn.executemany(insert.format(", ".join("?" * 9)), [(PROJECT, *row) for row in rows])
            conn.execute(
                "INSERT INTO sessions (project, session_id, task_id, bound, transcript_path, transcript_sha256, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (PROJECT, *bind),
            )
        return

    async def write() -> None:
        import asyncpg

        conn = await asyncpg.connect(str(location))
        try:
            await conn.executemany(
                insert.format(", ".join(f"${n}" for n in range(1, 10))), [(PROJECT, *row) for row in rows]
            )
            await conn.execute(
                "INSERT INTO sessions (project, session_id, task_id, bound, transcript_path, transcript_sha256, "
                "updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7)",
                PROJECT,
                *bind,
            )
        finally:
            await conn.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, write()).result()


async def test_every_session_the_hooks_saw_with_or_without_a_task_and_what_each_was_shown(
    db_path: Path, store: Store
) -> None:
    _write_session_logs(db_path)
    scope = Scope(store=store, project=PROJECT)
    seen = await _read(scope, lambda tx: tx.sessions.seen(PROJECT, 10))
    assert [(s.session_id, s.task_id, s.records, s.injected, s.offloaded, s.blocked) for s in seen] == [
        ("s-free", None, 1, 1, 0, 0),
        ("s-bound", "fix-login", 1, 2, 1, 1),
        ("s-quiet", None, 1, 0, 0, 0),
    ]
    assert (seen[1].first_at, seen[1].last_at) == ("2026-01-01T10:00:00Z", "2026-01-01T10:04:00Z")
    assert [s.session_id for s in await _read(scope, lambda tx: tx.sessions.seen(PROJECT, 1))] == ["s-free"]
    log = await _read(scope, lambda tx: tx.sessions.shown(PROJECT, "s-bound", 10))
    assert [(r.kind, r.text, r.label, r.source, r.ref) for r in log] == [
        ("injected", "# view", "the view", "", ""),
        ("offloaded", "[shaped]", "shaped", "Bash", "ev_1"),
        ("blocked", "run the tests", "Stop", "", ""),
        ("injected", "# repair", "repair", "", ""),
    ]
    newest = await _read(scope, lambda tx: tx.sessions.shown(PROJECT, "s-bound", 2))
    assert [r.text for r in newest] == ["run the tests", "# repair"]  # the newest, oldest first
    assert await _read(scope, lambda tx: tx.sessions.seen("/another/project", 10)) == []
