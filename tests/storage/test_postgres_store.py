"""The PostgreSQL store's own guarantees, beside the suite's runs of every storage test on it: migrations and
refusals, immutable chained versions, rollback, locks, the keyed index, and BM25 ranking equal to SQLite's."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import anyio
import asyncpg
import pytest
from mcp import Client

from ctxkeep.errors import DatabaseUnavailable, SchemaTooNew, VersionConflict
from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.server import build_server
from ctxkeep.settings import Settings
from ctxkeep.storage import SearchFilter, Store, open_store
from ctxkeep.storage.postgres.migrations import LATEST
from ctxkeep.storage.postgres.session import object_lock
from ctxkeep.tools.checkpoint.versions import checkpoint_save, verify_chain
from ctxkeep.tools.evidence.records import evidence_put
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.shared.search_terms import query_terms
from tests.conftest import PROJECT, tool_text
from tests.pg import fresh_schema

pytestmark = pytest.mark.anyio


@pytest.fixture
def pg_url() -> Iterator[str]:
    with fresh_schema() as url:
        yield url


@pytest.fixture
async def pg_store(pg_url: str) -> AsyncIterator[Store]:
    store = await open_store(pg_url)
    yield store
    await store.close()


async def _sql(url: str, *statements: str) -> list[asyncpg.Record]:
    conn = await asyncpg.connect(url)
    try:
        rows: list[asyncpg.Record] = []
        for statement in statements:
            rows = await conn.fetch(statement)
        return rows
    finally:
        await conn.close()


async def save(scope: Scope, task: str = "t", **fields: object) -> None:
    await checkpoint_save(scope, CheckpointSaveRequest(task_id=task, state=TaskState(goal="g", **fields)))  # type: ignore[arg-type]


async def test_a_newer_postgres_schema_is_refused(pg_url: str) -> None:
    await (await open_store(pg_url)).close()
    await _sql(pg_url, f"INSERT INTO schema_migrations (version, name) VALUES ({LATEST + 1}, 'from the future')")
    with pytest.raises(SchemaTooNew, match="newer than this ctxkeep knows"):
        await open_store(pg_url)


async def test_a_schema_another_program_uses_is_refused_unchanged(pg_url: str) -> None:
    await _sql(pg_url, "CREATE TABLE invoices (id int)")
    with pytest.raises(DatabaseUnavailable, match="not a ctxkeep database.*invoices"):
        await open_store(pg_url)
    assert [
        r[0] for r in await _sql(pg_url, "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    ] == ["invoices"]


async def test_stored_versions_cannot_be_updated_on_postgres(pg_store: Store, pg_url: str) -> None:
    await save(Scope(pg_store, PROJECT))
    with pytest.raises(asyncpg.PostgresError, match="checkpoint versions are immutable"):
        await _sql(pg_url, "UPDATE checkpoints SET state_json = '{}'")


async def test_an_insert_that_does_not_extend_the_chain_is_refused(pg_store: Store, pg_url: str) -> None:
    await save(Scope(pg_store, PROJECT))
    copy = (
        "INSERT INTO checkpoints (project, task_id, version, hash, parent_hash, state_json, state_schema, trigger, "
        "violations_json, created_at) SELECT project, task_id, {version}, 'x', {parent}, state_json, state_schema, "
        "trigger, violations_json, created_at FROM checkpoints"
    )
    with pytest.raises(asyncpg.PostgresError, match="does not name the hash of the version before it"):
        await _sql(pg_url, copy.format(version=2, parent="'not the hash of v1'"))
    with pytest.raises(asyncpg.PostgresError, match="does not follow a stored version"):
        await _sql(pg_url, copy.format(version=5, parent="hash"))


async def test_the_hash_chain_exposes_tampering_on_postgres(pg_store: Store, pg_url: str) -> None:
    scope = Scope(pg_store, PROJECT)
    await save(scope, pending=["a"])
    await save(scope, pending=["a", "b"])
    assert await verify_chain(scope, "t") == []
    await _sql(
        pg_url,
        "ALTER TABLE checkpoints DISABLE TRIGGER checkpoints_are_immutable",
        "UPDATE checkpoints SET state_json = replace(state_json, '\"b\"', '\"c\"') WHERE version = 2",
    )
    assert await verify_chain(scope, "t") == ["version 2 does not match its hash chain"]


async def test_a_failed_write_rolls_back_whole_on_postgres(pg_store: Store) -> None:
    scope = Scope(pg_store, PROJECT)
    await save(scope)
    with pytest.raises(RuntimeError):
        async with pg_store.transaction() as tx:
            found = await tx.checkpoints.get(PROJECT, "t")
            assert found is not None
            await tx.checkpoints.insert(
                PROJECT, found[0].__class__(**{**found[0].__dict__, "version": 2, "parent_hash": found[0].hash})
            )
            raise RuntimeError("crash inside the transaction")
    async with pg_store.snapshot() as tx:
        assert await tx.checkpoints.latest_version(PROJECT, "t") == 1


async def test_a_cancelled_transaction_rolls_back_and_releases_the_task(pg_store: Store) -> None:
    scope = Scope(pg_store, PROJECT)
    await save(scope)
    with anyio.move_on_after(0.2):
        async with pg_store.transaction() as tx:
            await tx.checkpoints.lock(PROJECT, "t")  # takes the task's lock
            await anyio.sleep(10)  # cancelled here, mid-transaction
    other = await open_store(pg_store.url, busy_timeout_ms=1_000)
    try:
        with anyio.fail_after(5):
            await save(Scope(other, PROJECT), pending=["next"])  # the lock was released with the rollback
        async with other.snapshot() as tx:
            assert await tx.checkpoints.latest_version(PROJECT, "t") == 2
    finally:
        await other.close()


async def test_a_task_held_past_busy_timeout_is_a_clear_error_and_the_next_call_works(pg_url: str) -> None:
    async with Client(build_server(Settings(db_path=pg_url, project=PROJECT, busy_timeout_ms=100))) as client:  # type: ignore[arg-type]
        assert not (await client.call_tool("checkpoint_save", {"task_id": "t", "state": {"goal": "g"}})).is_error
        holder = await asyncpg.connect(pg_url)
        transaction = holder.transaction()
        await transaction.start()
        await holder.execute("SELECT pg_advisory_xact_lock($1)", object_lock("task", PROJECT, "t"))  # another writer
        try:
            blocked = await client.call_tool(
                "checkpoint_save", {"task_id": "t", "state": {"goal": "g", "pending": ["p"]}, "expected_version": 1}
            )
        finally:
            await transaction.rollback()
            await holder.close()
        text = tool_text(blocked)
        assert (
            blocked.is_error
            and "is busy" in text
            and "retry" in text
            and "@127.0.0.1" in text.replace("localhost", "127.0.0.1")
        )
        assert ":" + pg_url.split(":")[2].split("@", maxsplit=1)[0] + "@" not in text  # never the password
        saved = await client.call_tool(
            "checkpoint_save", {"task_id": "t", "state": {"goal": "g", "pending": ["p"]}, "expected_version": 1}
        )
        assert saved.structured_content["version"] == 2


async def test_two_stores_saving_one_task_at_once_never_write_the_same_version(pg_url: str) -> None:
    stores = [await open_store(pg_url), await open_store(pg_url)]
    won: list[int] = []
    conflicts: list[int] = []

    async def saver(store: Store, name: str) -> None:
        scope = Scope(store, PROJECT)
        for step in range(15):
            async with store.snapshot() as tx:
                current = await tx.checkpoints.latest_version(PROJECT, "race")
            try:
                saved = await checkpoint_save(
                    scope,
                    CheckpointSaveRequest(
                        task_id="race",
                        expected_version=current,
                        strict=False,
                        state=TaskState(goal="g", next_action=f"{name}-{step}"),
                    ),
                )
                won.append(saved.version)
            except VersionConflict:  # the only failure allowed: the other saved first
                conflicts.append(current)

    try:
        async with anyio.create_task_group() as group:
            for store, name in zip(stores, "ab", strict=True):
                group.start_soon(saver, store, name)
        assert sorted(won) == list(range(1, len(won) + 1))  # every version written once, none skipped
        assert await verify_chain(Scope(stores[0], PROJECT), "race") == []
    finally:
        for store in stores:
            await store.close()


async def test_the_postgres_index_holds_only_terms_keyed_with_its_own_random_key(pg_store: Store, pg_url: str) -> None:
    scope = Scope(pg_store, PROJECT)
    await evidence_put(scope, [EvidenceItem(content="supplier freight invoice")])
    stored = {int(r[0]) for r in await _sql(pg_url, "SELECT term FROM evidence_terms")}
    public = {
        int.from_bytes(hashlib.blake2b(t.encode(), digest_size=6).digest(), "big")
        for t in ("supplier", "freight", "invoic")
    }
    assert len(stored) == 3 and stored.isdisjoint(public)
    key = bytes.fromhex((await _sql(pg_url, "SELECT value FROM store_meta WHERE name = 'term_key'"))[0][0])
    assert len(key) == 32
    keyed = {
        int.from_bytes(hashlib.blake2b(t.encode(), digest_size=6, key=key).digest(), "big")
        for t in ("supplier", "freight", "invoic")
    }
    assert stored == keyed


CORPUS = [
    "Supplier C quoted 0.48 USD per piece for freight, excluding customs",
    "The freight forwarder confirmed the container leaves Shenzhen on Monday",
    "Running the test suite again: 3 failures in test_freight.py, all about rounding",
    "运费 已经 确认，每件 0.48 美元",
    "Customs clearance takes five business days for electronics",
    "We ran tests twice; the rounding failures are gone after normalizing to USD/piece",
    "Supplier A and Supplier B did not include freight in their quotes",
    "Meeting notes: freight, customs, insurance, and payment terms were discussed at length",
    "The purchase order PO-1 for 184300 USD waits for the procurement director",
    "freight freight freight: a noisy line repeating one word",
] * 3


async def test_search_ranks_and_scores_as_sqlite_does(tmp_path: Path, pg_store: Store) -> None:
    sqlite_store = await open_store(tmp_path / "same.db")
    try:
        refs = []
        for store in (sqlite_store, pg_store):
            scope = Scope(store, PROJECT)
            items = [
                EvidenceItem(
                    content=f"{text} (copy {i // 10})", source=f"s{i % 4}", tags=["even"] if i % 2 == 0 else []
                )
                for i, text in enumerate(CORPUS)
            ]
            refs.append((await evidence_put(scope, items)).refs)
        assert refs[0] == refs[1]
        where = SearchFilter(task_id=None, kind=None, tags=[], valid_at=None, exclude_expired_at=None)
        tagged = SearchFilter(task_id=None, kind=None, tags=["even"], valid_at=None, exclude_expired_at=None)
        for query in (
            "freight",
            "supplier freight quote",
            "running tests",
            "运费",
            "customs insurance payment",
            "USD piece",
            "procurement director PO-1",
            "nothing matches this at all",
        ):
            for filters in (where, tagged):
                found = []
                for store in (sqlite_store, pg_store):
                    async with store.snapshot() as tx:
                        found.append(await tx.evidence.search(PROJECT, query_terms(query), filters, 10))
                assert [row.ref for row, _ in found[0]] == [row.ref for row, _ in found[1]], query
                for (_, a), (_, b) in zip(*found, strict=True):
                    assert a == pytest.approx(b, rel=1e-9), query
    finally:
        await sqlite_store.close()


async def test_document_frequencies_follow_puts_and_deletes_and_keep_no_term_of_deleted_text(
    pg_store: Store, pg_url: str
) -> None:
    from ctxkeep.tools.evidence.records import evidence_delete

    scope = Scope(pg_store, PROJECT)
    refs = (
        await evidence_put(
            scope,
            [
                EvidenceItem(content=f"freight quote number {n} from {'zanzibar' if n == 2 else 'acme'}")
                for n in range(4)
            ],
        )
    ).refs
    await evidence_delete(scope, refs[2])
    async with pg_store.snapshot() as tx:
        assert await tx.evidence.document_frequencies(PROJECT, ["zanzibar", "freight", "acm"]) == {
            "freight": 3,
            "acm": 3,
        }
