"""Task bundles (issue 19 item 5): `ctxkeep export TASK` then `ctxkeep import BUNDLE` on a fresh database gives the
same loads and hashes; the bundle is deterministic; a changed bundle, a broken chain or changed evidence is refused;
a bundle that only adds versions merges them; a diverging history is refused naming the fork. On both stores."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from ctxkeep.errors import LeaseHeld, Refused
from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.evidence import EvidenceGetRequest, EvidenceItem
from ctxkeep.storage import Store, open_store
from ctxkeep.text import canonical_json
from ctxkeep.tools.checkpoint import checkpoint_load, checkpoint_save, export_bundle, import_bundle, verify_chain
from ctxkeep.tools.evidence import evidence_get, evidence_put
from ctxkeep.tools.scope import Scope
from tests.conftest import PROJECT, fixed_clock, procurement_state
from tests.db_dump import is_postgres, query
from tests.pg import fresh_schema
from tests.paths import TESTS

pytestmark = pytest.mark.anyio
ROOT = TESTS.parent
OTHER = "/home/bob/alpha"  # the same repository checked out elsewhere: another project key


@pytest.fixture
def other_db(db_path: Path, tmp_path: Path) -> Iterator[Path]:
    """A second, fresh database of the same kind as db_path."""
    if is_postgres(db_path):
        with fresh_schema() as url:
            yield url  # type: ignore[misc]
    else:
        yield tmp_path / "bob.db"


@pytest.fixture
async def bob(other_db: Path) -> AsyncIterator[Scope]:
    store = await open_store(other_db)
    yield Scope(store, OTHER, clock=fixed_clock("2026-12-01T09:00:00+00:00"))
    await store.close()


def alice_scope(store: Store) -> Scope:
    return Scope(store, PROJECT, clock=fixed_clock("2026-11-30T12:00:00+00:00"))


async def save(scope: Scope, **changes: Any) -> str:
    return (
        await checkpoint_save(
            scope, CheckpointSaveRequest(task_id="proc", state=TaskState.model_validate(procurement_state(**changes)))
        )
    ).hash


async def history(scope: Scope) -> list[str]:
    """Three versions citing two evidence records, and a digest."""
    stored = await evidence_put(
        scope,
        [
            EvidenceItem(content="Supplier C: freight 0.48 USD/piece, quote valid to Dec 15", source="mail"),
            EvidenceItem(content="PO-1 waits for the procurement director's signature", source="erp"),
        ],
    )
    quote, order = stored.refs
    facts = [{"key": "Supplier C freight", "value": 0.48, "unit": "USD/piece", "source_ref": quote}]
    hashes = [await save(scope)]
    hashes.append(await save(scope, facts=facts, evidence_refs=[quote]))
    hashes.append(
        await save(
            scope, facts=facts, evidence_refs=[quote, order[:10]], pending=["Supplier C freight missing", "sign PO-1"]
        )
    )
    return hashes


async def test_export_then_import_on_a_fresh_database_gives_identical_loads_and_hashes(
    store: Store, bob: Scope
) -> None:
    alice = alice_scope(store)
    hashes = await history(alice)
    bundle = await export_bundle(alice, "proc")
    imported = await import_bundle(bob, bundle)
    assert imported.added_versions == [1, 2, 3] and imported.added_evidence == 2 and imported.latest_hash == hashes[-1]
    bob_same_clock = Scope(bob.store, OTHER, clock=alice.clock)
    for version in (1, 2, 3):
        here, there = (
            await checkpoint_load(alice, "proc", version),
            await checkpoint_load(bob_same_clock, "proc", version),
        )
        assert there.model_dump() == here.model_dump()
    assert [row.hash for row in await _chain(bob)] == hashes and await verify_chain(bob, "proc") == []
    ref = json.loads(bundle)["evidence"][0]["ref"]
    got = await evidence_get(bob, EvidenceGetRequest(ref=ref))
    assert "0.48 USD/piece" in got.content
    assert await export_bundle(bob_same_clock, "proc") == bundle  # the same bytes from the copy
    assert await export_bundle(alice, "proc") == bundle  # and again from the source: deterministic


async def _chain(scope: Scope) -> list[Any]:
    async with scope.store.snapshot() as tx:
        return await tx.checkpoints.chain(scope.project, "proc")


def _resealed(data: dict[str, Any]) -> str:
    body = {k: v for k, v in data.items() if k != "bundle_sha256"}
    return json.dumps({**body, "bundle_sha256": hashlib.sha256(canonical_json(body).encode()).hexdigest()})


async def test_a_changed_bundle_is_refused_and_nothing_is_written(store: Store, bob: Scope) -> None:
    alice = alice_scope(store)
    await history(alice)
    data = json.loads(await export_bundle(alice, "proc"))
    data["versions"][1]["state"]["facts"][0]["value"] = 0.38  # a cheaper freight, by hand
    with pytest.raises(Refused, match="changed after it was exported"):
        await import_bundle(bob, json.dumps(data))
    with pytest.raises(Refused, match="version 2 of task 'proc' does not match its hash chain"):
        await import_bundle(bob, _resealed(data))  # resealed, but the chain still says no
    data = json.loads(await export_bundle(alice, "proc"))
    data["evidence"][0]["content"] = data["evidence"][0]["content"].replace("0.48", "0.38")
    with pytest.raises(Refused, match="does not match its sha256"):
        await import_bundle(bob, _resealed(data))
    assert await _chain(bob) == []
    async with bob.store.snapshot() as tx:
        assert await tx.evidence.rows(OTHER, [e["ref"] for e in data["evidence"]]) == {}


async def test_a_bundle_that_only_adds_versions_merges_them_and_a_second_import_adds_nothing(
    store: Store, bob: Scope
) -> None:
    alice = alice_scope(store)
    hashes = await history(alice)
    first = await export_bundle(alice, "proc")
    await import_bundle(bob, first)
    hashes.append(
        await save(
            alice,
            next_action="Ask Supplier C again",
            facts=[],
            pending=["Supplier C freight missing", "sign PO-1"],
            dropped=[{"kind": "fact", "item": "Supplier C freight", "reason": "quote expired"}],
            evidence_refs=[],
        )
    )
    merged = await import_bundle(bob, await export_bundle(alice, "proc"))
    assert merged.added_versions == [4] and merged.latest_hash == hashes[-1]
    again = await import_bundle(bob, await export_bundle(alice, "proc"))
    assert again.added_versions == [] and again.latest_version == 4
    older = await import_bundle(bob, first)  # an older bundle: bob already holds all of it
    assert older.added_versions == [] and older.latest_version == 4
    assert [row.hash for row in await _chain(bob)] == hashes


async def test_a_diverging_history_is_refused_naming_the_fork(store: Store, bob: Scope) -> None:
    alice = alice_scope(store)
    hashes = await history(alice)
    await import_bundle(bob, await export_bundle(alice, "proc"))
    theirs = await save(
        alice, next_action="alice: call Supplier C", pending=["Supplier C freight missing", "sign PO-1"]
    )
    mine = await save(bob, next_action="bob: email Supplier C", pending=["Supplier C freight missing", "sign PO-1"])
    with pytest.raises(Refused) as refused:
        await import_bundle(bob, await export_bundle(alice, "proc"))
    message = str(refused.value)
    assert "forks at version 4" in message and mine[:12] in message and theirs[:12] in message
    assert "versions 1 to 3 are the same" in message
    assert [row.hash for row in await _chain(bob)] == [*hashes, mine]  # nothing written


async def test_an_import_into_a_task_another_executor_holds_is_refused(store: Store, bob: Scope) -> None:
    alice = alice_scope(store)
    await history(alice)
    await import_bundle(bob, await export_bundle(alice, "proc"))
    await checkpoint_load(bob, "proc", owner="bob-laptop", lease_seconds=600)
    await save(alice, next_action="more", pending=["Supplier C freight missing", "sign PO-1"])
    with pytest.raises(LeaseHeld, match="import refused: task 'proc' is leased to 'bob-laptop'"):
        await import_bundle(bob, await export_bundle(alice, "proc"))


def _cli(db: Path, project: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CTXKEEP_DB": str(db), "CTXKEEP_PROJECT": project}
    return subprocess.run(
        [sys.executable, "-m", "ctxkeep", *args],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
    )


async def test_the_export_and_import_commands_carry_a_task_through_a_file(
    db_path: Path, other_db: Path, tmp_path: Path
) -> None:
    store = await open_store(db_path)
    try:
        hashes = await history(alice_scope(store))
    finally:
        await store.close()
    bundle = tmp_path / "proc.ctxkeep.json"
    done = _cli(db_path, PROJECT, "export", "proc", "-o", str(bundle))
    assert done.returncode == 0, done.stderr
    assert bundle.read_text() == _cli(db_path, PROJECT, "export", "proc").stdout  # -o and stdout: the same bytes
    imported = _cli(other_db, OTHER, "import", str(bundle))
    assert imported.returncode == 0 and "versions 1 to 3 added, 2 evidence record(s)" in imported.stdout, (
        imported.stderr
    )
    assert [row[0] for row in sorted(query(other_db, "SELECT version, hash FROM checkpoints"))] == [1, 2, 3]
    assert [row[1] for row in sorted(query(other_db, "SELECT version, hash FROM checkpoints"))] == hashes
    broken = bundle.read_text().replace("0.48", "0.38")
    refused = _cli(other_db, OTHER, "import", "-", stdin=broken)
    assert (
        refused.returncode == 1
        and "changed after it was exported" in refused.stderr
        and "Traceback" not in refused.stderr
    )
