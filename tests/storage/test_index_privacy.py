"""What the search index gives away: terms keyed per database (never with a public constant), nothing left of deleted
text in the file's bytes, ranking and blobs scoped to the project; a file from before keeps every search result
(issue 14: 12, 15)."""

from __future__ import annotations

import hashlib
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from ctxkeep.models.evidence import EvidenceGetRequest, EvidenceItem, EvidenceSearchRequest
from ctxkeep.models.memory import MemorySearchRequest, MemoryWriteRequest
from ctxkeep.storage import SearchFilter, Store, open_store
from ctxkeep.tools.evidence.get import evidence_get
from ctxkeep.tools.evidence.records import evidence_delete, evidence_put
from ctxkeep.tools.evidence.search import evidence_search, ranked_hits
from ctxkeep.tools.memory.records import memory_search, memory_write
from ctxkeep.tools.scope import Scope
from tests.conftest import PROJECT
from tests.paths import TESTS

pytestmark = pytest.mark.anyio
FIXTURE = TESTS / "fixtures" / "schema6.db"
SECRET = "launch code zebra unicorn quokka at pier nineteen"
WORDS = ["zebra", "unicorn", "quokka", "launch", "pier", "nineteen"]  # their stems are the words themselves
_HEX_RUN = re.compile(rb"[0-9a-f]{10,}")


def raw_bytes(db: Path) -> bytes:
    wal = db.with_name(db.name + "-wal")
    return db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def public_hash(term: str) -> str:
    """How ctxkeep up to schema 6 hashed a term: a key anyone could read in the source."""
    return hashlib.blake2b(term.encode(), digest_size=6, person=b"ctxkeep-terms").hexdigest()


def hex_runs(data: bytes) -> set[bytes]:
    return set(_HEX_RUN.findall(data))


def still_there(runs: set[bytes], data: bytes) -> list[bytes]:
    """The runs any 10-character window of which is still in `data` (an index stores terms prefix-compressed)."""
    return sorted(r for r in runs if any(r[i : i + 10] in data for i in range(len(r) - 9)))


async def test_the_index_holds_no_term_hashed_with_the_public_constant(scope: Scope, db_path: Path) -> None:
    await evidence_put(scope, [EvidenceItem(content=SECRET, redact=False)])
    await scope.store.checkpoint_wal()
    data = raw_bytes(db_path)
    assert [w for w in WORDS if public_hash(w)[2:].encode() in data] == []


async def test_two_files_index_the_same_words_differently(tmp_path: Path) -> None:
    added = []
    for name in ("one.db", "two.db"):
        store = await open_store(tmp_path / name)
        try:
            before = hex_runs(raw_bytes(tmp_path / name))
            await evidence_put(Scope(store, PROJECT), [EvidenceItem(content=SECRET, redact=False)])
            added.append(hex_runs(raw_bytes(tmp_path / name)) - before)
        finally:
            await store.close()
    assert added[0] - added[1] and added[1] - added[0]  # refs and blob hashes agree; the indexed terms do not


async def test_a_deleted_record_leaves_no_hashed_term_in_the_file_or_wal(scope: Scope, db_path: Path) -> None:
    await evidence_put(scope, [EvidenceItem(content="an unrelated record that stays, about harbour cranes")])
    before = hex_runs(raw_bytes(db_path))
    ref = (await evidence_put(scope, [EvidenceItem(content=SECRET, title="vault note", redact=False)])).refs[0]
    added = hex_runs(raw_bytes(db_path)) - before
    assert len(added) >= len(WORDS)  # the scan sees the new terms before the delete
    deleted = await evidence_delete(scope, ref)
    assert deleted.wal_truncated
    assert still_there(added, raw_bytes(db_path)) == []
    assert (await evidence_search(scope, EvidenceSearchRequest(query="harbour cranes"))).hits  # the index still works


async def test_one_projects_scores_do_not_move_when_another_project_stores_text(store: Store) -> None:
    alpha, beta = Scope(store, "/projects/alpha"), Scope(store, "/projects/beta")
    await evidence_put(alpha, [EvidenceItem(content=f"freight quote {i} for pallets and crates") for i in range(2)])
    await evidence_put(alpha, [EvidenceItem(content=f"meeting note {i} about the harbour office") for i in range(6)])
    where = SearchFilter(task_id=None, kind=None, tags=[], valid_at=None, exclude_expired_at=None)

    async def scores() -> list[tuple[str, float]]:
        async with store.snapshot() as tx:  # the raw BM25 scores (the tool shows them relative to the best hit)
            return [
                (row.ref, score) for row, score in await ranked_hits(tx, alpha.project, "freight pallets", where, 10)
            ]

    before = await scores()
    assert len(before) == 2
    await evidence_put(
        beta, [EvidenceItem(content=f"pallets pallets freight note {i} " + "filler " * i) for i in range(40)]
    )
    assert await scores() == before
    await memory_write(
        alpha,
        MemoryWriteRequest(
            kind="user_preference",
            key="pallets",
            content="Pallets go on the left dock",
            explicit_confirmation=True,
            source_message_id="m1",
        ),
    )
    memory_before = (await memory_search(alpha, MemorySearchRequest(query="pallets dock"))).memories
    for i in range(10):
        await memory_write(
            beta,
            MemoryWriteRequest(
                kind="user_preference",
                key=f"dock {i}",
                content=f"dock {i} pallets",
                explicit_confirmation=True,
                source_message_id=f"b{i}",
            ),
        )
    assert (await memory_search(alpha, MemorySearchRequest(query="pallets dock"))).memories == memory_before


async def test_deleting_content_another_project_also_holds_says_the_blob_went(store: Store) -> None:
    alpha, beta = Scope(store, "/projects/alpha"), Scope(store, "/projects/beta")
    mine = (await evidence_put(alpha, [EvidenceItem(content=SECRET, redact=False)])).refs[0]
    theirs = (await evidence_put(beta, [EvidenceItem(content=SECRET, redact=False)])).refs[0]
    assert (await evidence_delete(alpha, mine)).blob_removed is True
    assert (await evidence_get(beta, EvidenceGetRequest(ref=theirs))).content == SECRET


async def test_a_file_written_before_keeps_every_search_result_under_its_own_key(tmp_path: Path) -> None:
    db = tmp_path / "old.db"
    shutil.copy(FIXTURE, db)
    data = raw_bytes(db)
    assert (
        public_hash("oskarsson")[2:].encode() in data and public_hash("zebra")[2:].encode() in data
    )  # as the old code left it
    store = await open_store(db)
    try:
        alpha, beta = Scope(store, "/projects/alpha"), Scope(store, "/projects/beta")

        async def titles(scope: Scope, query: str) -> list[str | None]:
            return sorted(h.title for h in (await evidence_search(scope, EvidenceSearchRequest(query=query))).hits)

        assert await titles(alpha, "freight invoice") == ["invoice"]
        assert await titles(alpha, "run") == await titles(alpha, "studies pumps") == ["pumps"]
        assert await titles(alpha, "运费") == await titles(alpha, "推荐") == ["约束"]
        assert await titles(alpha, "Oskarsson harbour") == ["invoice", "pumps"]
        assert await titles(alpha, "lighthouse") == await titles(alpha, "zebra unicorn") == []
        assert await titles(beta, "freight invoice") == ["invoice"] and await titles(beta, "lighthouse") == ["log"]
        assert await titles(beta, "run") == []
        assert [m.key for m in (await memory_search(alpha, MemorySearchRequest(query="tables"))).memories] == [
            "report format"
        ]
        assert [m.key for m in (await memory_search(beta, MemorySearchRequest(query="harbour master"))).memories] == [
            "greeting"
        ]
        assert [m.key for m in (await memory_search(beta, MemorySearchRequest(query="tables"))).memories] == []
        invoice = (await evidence_search(alpha, EvidenceSearchRequest(query="invoice"))).hits[0].ref
        assert (await evidence_delete(alpha, invoice)).blob_removed  # beta's copy is its own now
        assert [h.title for h in (await evidence_search(beta, EvidenceSearchRequest(query="invoice"))).hits] == [
            "invoice"
        ]
    finally:
        await store.close()
    data = raw_bytes(db)
    for word in ("oskarsson", "zebra", "unicorn", "harbour", "lighthouse"):
        assert public_hash(word)[2:].encode() not in data, word
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
