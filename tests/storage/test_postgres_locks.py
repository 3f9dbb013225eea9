"""Locks as narrow as the invariant on PostgreSQL (issue 25): only the append to one task's chain (with its lease) and
the next version of one memory key are serial. While another server holds a task, every other write of the project
goes through at once: saves of other tasks, evidence, memories of other keys, the journal, working sets. Saves of
one task that race are serialized without a version written twice; a wait for a held task is logged naming what
waited for what, and one that gives up names the holder."""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import anyio
import asyncpg
import pytest

from ctxkeep.errors import DatabaseUnavailable
from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.models.journal import ActionIntentRequest
from ctxkeep.models.memory import MemoryWriteRequest
from ctxkeep.models.working_set import WorkingSetRequest
from ctxkeep.storage import Store, open_store
from ctxkeep.storage.postgres.session import object_lock
from ctxkeep.tools.checkpoint.versions import checkpoint_save, new_version, verify_chain
from ctxkeep.tools.evidence.records import evidence_put
from ctxkeep.tools.journal import action_intent
from ctxkeep.tools.memory import memory_write
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.working_set import build_working_set
from tests.pg import fresh_schema

pytestmark = pytest.mark.anyio
PROJECT = "/projects/locks"


@pytest.fixture
def pg_url() -> Iterator[str]:
    with fresh_schema() as url:
        yield url


@pytest.fixture
async def store(pg_url: str) -> AsyncIterator[Store]:
    opened = await open_store(pg_url, busy_timeout_ms=3_000)
    yield opened
    await opened.close()


async def save(scope: Scope, task: str, **fields: object) -> int:
    state = TaskState(goal=f"Work on {task}", **fields)  # type: ignore[arg-type]
    return (await checkpoint_save(scope, CheckpointSaveRequest(task_id=task, state=state, strict=False))).version


class Holder:
    """Another server inside a write transaction that holds one object's lock."""

    def __init__(self, url: str, kind: str, name: str) -> None:
        self.url, self.key = url, object_lock(kind, PROJECT, name)

    async def __aenter__(self) -> Holder:
        self.conn = await asyncpg.connect(self.url)
        self.transaction = self.conn.transaction()
        await self.transaction.start()
        await self.conn.execute("SELECT pg_advisory_xact_lock($1)", self.key)
        return self

    async def __aexit__(self, *_: object) -> None:
        await self.transaction.rollback()
        await self.conn.close()


@asynccontextmanager
async def appending(url: str, task: str) -> AsyncIterator[None]:
    """Another server in the middle of appending a version to `task` (its transaction open until the block ends)."""
    other = await open_store(url)
    scope = Scope(other, PROJECT)
    try:
        async with other.transaction() as tx:
            found = await tx.checkpoints.get(PROJECT, task)
            assert found is not None
            previous, current = found
            state = TaskState(goal=f"Work on {task}", pending=["by the other server"]).canonical()
            await tx.checkpoints.insert(
                PROJECT, new_version(scope, task, previous, current, state, "manual", None, None)
            )
            yield
    finally:
        await other.close()


async def test_while_one_task_is_held_every_other_write_of_the_project_goes_through_at_once(
    store: Store, pg_url: str
) -> None:
    scope = Scope(store, PROJECT)
    await save(scope, "held")
    await save(scope, "other")
    await evidence_put(scope, [EvidenceItem(content="warms the token counter up")])
    async with appending(pg_url, "held"):
        started = time.monotonic()
        with anyio.fail_after(2.5):  # the busy timeout is 3 s: a project lock would make each of these wait for it
            assert await save(scope, "other", pending=["next"]) == 2
            assert await save(scope, "new task") == 1
            await evidence_put(scope, [EvidenceItem(content="a tool output", task_id="held")])
            await memory_write(
                scope,
                MemoryWriteRequest(
                    kind="user_preference",
                    key="editor",
                    content="vim",
                    explicit_confirmation=True,
                    source_message_id="m1",
                ),
            )
            await action_intent(
                scope, ActionIntentRequest(task_id="held", idempotency_key="held:mail:1", action="send", target="a")
            )
            await build_working_set(scope, WorkingSetRequest(task_id="held", budget_tokens=2_000))
        assert time.monotonic() - started < 2.5
        with pytest.raises(DatabaseUnavailable, match="is busy"):  # the held task itself waits, then says so
            await save(scope, "held", pending=["p"])


async def test_a_memory_key_being_written_holds_up_only_that_key(store: Store, pg_url: str) -> None:
    scope = Scope(store, PROJECT)
    request = MemoryWriteRequest(
        kind="user_preference", key="tabs", content="spaces", explicit_confirmation=True, source_message_id="m1"
    )
    async with Holder(pg_url, "memory", "tabs"):
        with anyio.fail_after(2.5):
            await memory_write(scope, request.model_copy(update={"key": "theme", "content": "dark"}))
        with pytest.raises(DatabaseUnavailable, match="is busy"):
            await memory_write(scope, request)


async def test_saves_of_one_task_racing_on_two_servers_each_land_once_on_the_chain(pg_url: str) -> None:
    stores = [await open_store(pg_url), await open_store(pg_url)]
    saved: list[int] = []

    async def saver(store: Store, name: str) -> None:
        for step in range(12):
            saved.append(await save(Scope(store, PROJECT), "race", decisions=[f"{name} {step}"]))

    try:
        async with anyio.create_task_group() as group:
            for store, name in zip(stores, "ab", strict=True):
                group.start_soon(saver, store, name)
        assert sorted(saved) == list(range(1, 25))  # no save lost, none written over another, none twice
        assert await verify_chain(Scope(stores[0], PROJECT), "race") == []
    finally:
        for store in stores:
            await store.close()


async def test_a_wait_for_a_held_task_is_logged_and_one_that_gives_up_names_the_holder(
    pg_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    patient = await open_store(pg_url, busy_timeout_ms=5_000)
    hasty = await open_store(pg_url, busy_timeout_ms=300)
    try:
        await save(Scope(patient, PROJECT), "t")
        caplog.set_level(logging.WARNING, logger="ctxkeep")
        async with Holder(pg_url, "task", "t") as holder:
            with pytest.raises(DatabaseUnavailable, match="is busy"):
                await save(Scope(hasty, PROJECT), "t", pending=["a"])
            holder_pid = await holder.conn.fetchval("SELECT pg_backend_pid()")
            gave_up = [r.getMessage() for r in caplog.records if "gave up" in r.getMessage()]
            assert gave_up and f"pid {holder_pid}" in gave_up[0] and "'t'" in gave_up[0], gave_up

            async def release_later() -> None:
                await anyio.sleep(1.3)
                await holder.transaction.rollback()
                holder.transaction = holder.conn.transaction()
                await holder.transaction.start()

            async with anyio.create_task_group() as group:
                group.start_soon(release_later)
                assert await save(Scope(patient, PROJECT), "t", pending=["b"]) == 2
        waited = [r.getMessage() for r in caplog.records if "waited" in r.getMessage()]
        assert waited and "task 't'" in waited[0] and PROJECT in waited[0], waited
    finally:
        await patient.close()
        await hasty.close()
