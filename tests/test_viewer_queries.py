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
