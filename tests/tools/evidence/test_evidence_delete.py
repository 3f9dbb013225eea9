"""Deletion: the text is gone from every table and from the raw bytes of the file and its WAL."""

from __future__ import annotations

import sqlite3
import zlib
from pathlib import Path

import pytest
from mcp import Client

from ctxkeep.tools.evidence.records import evidence_gc
from ctxkeep.tools.scope import Scope
from tests.conftest import fixed_clock, tool_text

pytestmark = pytest.mark.anyio

SECRET = "launch code zebra-unicorn-4471 for the quarterly vault at pier nineteen"


def raw_bytes(db_path: Path) -> bytes:
    wal = db_path.with_name(db_path.name + "-wal")
    return db_path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


async def test_deleted_text_leaves_no_trace_in_the_file_or_wal(client: Client, db_path: Path) -> None:
    stored = (
        await client.call_tool("evidence_put", {"content": SECRET, "title": "vault note", "redact": False})
    ).structured_content
    await client.call_tool("evidence_put", {"content": "an unrelated record that stays"})
    compressed = zlib.compress(SECRET.encode(), 6)
    assert compressed in raw_bytes(db_path)  # the stored blob: the scan can see it before the delete
    deleted = await client.call_tool("evidence_delete", {"ref": stored["ref"]})
    assert deleted.structured_content == {
        "ref": stored["ref"],
        "deleted": True,
        "blob_removed": True,
        "wal_truncated": True,
    }
    data = raw_bytes(db_path)
    for needle in (SECRET.encode(), b"zebra-unicorn-4471", compressed, b"vault note"):
        assert needle not in data, needle
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT count(*) FROM evidence").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM blobs").fetchone()[0] == 1
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        tables = [
            row[0]
            for row in conn.execute("SELECT name FROM sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%fts5 (%'")
        ]
        assert len(tables) == 2  # this project's evidence and memory indexes
        for table in tables:
            conn.execute(f'INSERT INTO "{table}" ("{table}") VALUES (\'integrity-check\')')
    assert (
        await client.call_tool("evidence_search", {"format": "json", "query": "zebra unicorn vault"})
    ).structured_content["hits"] == []
    again = await client.call_tool("evidence_get", {"format": "json", "ref": stored["ref"]})
    assert again.is_error and "no evidence" in tool_text(again)


async def test_a_blob_shared_with_another_record_survives_for_it(client: Client) -> None:
    first = (await client.call_tool("evidence_put", {"content": SECRET, "title": "one"})).structured_content
    second = (await client.call_tool("evidence_put", {"content": SECRET, "title": "two"})).structured_content
    deleted = await client.call_tool("evidence_delete", {"ref": first["ref"]})
    assert deleted.structured_content["blob_removed"] is False
    kept = await client.call_tool("evidence_get", {"format": "json", "ref": second["ref"]})
    assert kept.structured_content["content"] == SECRET


async def test_gc_deletes_expired_evidence_but_keeps_what_a_checkpoint_cites(client: Client, scope: Scope) -> None:
    expired = (
        await client.call_tool("evidence_put", {"content": "old quote", "expires_at": "2026-01-01T00:00:00Z"})
    ).structured_content
    cited = (
        await client.call_tool("evidence_put", {"content": "cited quote", "expires_at": "2026-01-01T00:00:00Z"})
    ).structured_content
    fresh = (await client.call_tool("evidence_put", {"content": "fresh quote"})).structured_content
    state = {"goal": "g", "facts": [{"key": "freight", "value": 0.48, "source_ref": cited["ref"]}]}
    await client.call_tool("checkpoint_save", {"task_id": "t", "state": state})
    result = await evidence_gc(Scope(store=scope.store, project=scope.project, clock=fixed_clock()))
    assert result.deleted == [expired["ref"]] and result.kept_cited == [cited["ref"]]
    assert (await client.call_tool("evidence_get", {"format": "json", "ref": expired["ref"]})).is_error
    for ref in (cited["ref"], fresh["ref"]):
        assert not (await client.call_tool("evidence_get", {"format": "json", "ref": ref})).is_error
