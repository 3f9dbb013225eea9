"""A forget or delete that a concurrent reader keeps from truncating the WAL: the truncation is owed, recorded in the
file, and finished at the next chance (the next write, the next forget, the next open), proved on the raw bytes
(issue 14: 11)."""

from __future__ import annotations

import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.models.memory import MemoryForgetRequest, MemoryWriteRequest
from ctxkeep.storage import open_store
from ctxkeep.tools.evidence.records import evidence_delete, evidence_put
from ctxkeep.tools.memory.forget import memory_forget
from ctxkeep.tools.memory.records import memory_write
from ctxkeep.tools.scope import Scope
from tests.conftest import PROJECT

pytestmark = pytest.mark.anyio
SECRET = "Deliver every parcel to Zanzibar Quay 77, door of Mr Oskarsson"


NEEDLES = [b"Zanzibar Quay", b"Oskarsson", zlib.compress(SECRET.encode(), 6)]  # as text, and as a stored evidence blob


def bytes_hold_secret(db: Path) -> bool:
    files = [db, db.with_name(db.name + "-wal")]
    return any(needle in f.read_bytes() for f in files if f.exists() for needle in NEEDLES)


@contextmanager
def reader(db: Path, keep_open: list[sqlite3.Connection] | None = None) -> Iterator[sqlite3.Connection]:
    """Another process's reader, holding its snapshot (and so the WAL) until released. With `keep_open` its connection
    stays open afterwards (appended there): the last connection to close would checkpoint the file itself."""
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("SELECT count(*) FROM memories").fetchone()
    try:
        yield conn
    finally:
        conn.execute("COMMIT")
        if keep_open is None:
            conn.close()
        else:
            keep_open.append(conn)


async def open_scope(db: Path) -> Scope:
    return Scope(await open_store(db, busy_timeout_ms=200), PROJECT)


async def remember(scope: Scope, key: str = "delivery address", content: str = SECRET) -> None:
    await memory_write(
        scope,
        MemoryWriteRequest(
            kind="user_preference", key=key, content=content, explicit_confirmation=True, source_message_id="msg-3"
        ),
    )


async def forget_under_a_reader(db: Path) -> Scope:
    scope = await open_scope(db)
    await remember(scope)
    assert bytes_hold_secret(db)  # the scan can see it
    with reader(db):
        gone = await memory_forget(scope, MemoryForgetRequest(key="delivery address"))
        assert gone.wal_cleared is False
        for i in range(20):  # while the reader holds its snapshot, the old pages must stay for it
            await remember(scope, key=f"other {i}", content=f"unrelated note {i}")
    return scope


async def test_the_next_write_after_the_reader_finishes_the_owed_truncation(db_path: Path) -> None:
    scope = await forget_under_a_reader(db_path)
    try:
        await remember(scope, key="after", content="one more unrelated note")
        assert not bytes_hold_secret(db_path)
    finally:
        await scope.store.close()


async def test_forgetting_again_retries_the_owed_truncation(db_path: Path) -> None:
    scope = await forget_under_a_reader(db_path)
    try:
        again = await memory_forget(scope, MemoryForgetRequest(key="delivery address"))
        assert again.already_forgotten and again.wal_cleared is True
        assert not bytes_hold_secret(db_path)
    finally:
        await scope.store.close()


async def test_the_next_open_finishes_a_truncation_owed_across_a_restart(db_path: Path) -> None:
    scope = await open_scope(db_path)
    await remember(scope)
    still_open: list[sqlite3.Connection] = []
    with reader(db_path, keep_open=still_open):  # held across the restart of the server
        assert (await memory_forget(scope, MemoryForgetRequest(key="delivery address"))).wal_cleared is False
        await scope.store.close()
    try:
        assert bytes_hold_secret(db_path)  # nothing has run since the reader let go
        reopened = await open_scope(db_path)
        try:
            assert not bytes_hold_secret(db_path)
        finally:
            await reopened.store.close()
    finally:
        still_open[0].close()


async def test_an_evidence_delete_under_a_reader_is_finished_by_the_next_write(db_path: Path) -> None:
    scope = await open_scope(db_path)
    try:
        ref = (await evidence_put(scope, [EvidenceItem(content=SECRET, redact=False)])).refs[0]
        assert bytes_hold_secret(db_path)
        with reader(db_path):
            assert (await evidence_delete(scope, ref)).wal_truncated is False
        await evidence_put(scope, [EvidenceItem(content="an unrelated note")])
        assert not bytes_hold_secret(db_path)
    finally:
        await scope.store.close()
