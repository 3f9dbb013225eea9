"""Memory and journal end to end over real stdio: forget leaves no trace anywhere, down to the file's bytes;
an intent survives SIGKILL of the server and is reported on resume until its result is recorded."""

from __future__ import annotations

import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import PROJECT, stdio_params, tool_text
from tests.db_dump import is_postgres, query
from tests.tools.journal.test_journal import INTENT, KEY

pytestmark = [pytest.mark.anyio, pytest.mark.slow]
SECRET = "Deliver every parcel to Zanzibar Quay 77, door of Mr Oskarsson"
FRAGMENTS = ["Zanzibar Quay", "Oskarsson"]


def _holds_secret(value: Any) -> bool:
    if isinstance(value, str):
        return any(f.casefold() in value.casefold() for f in FRAGMENTS)
    if isinstance(value, bytes):
        return any(f.encode("utf-8") in value for f in FRAGMENTS)
    return False


def _tables_holding_secret(db_path: Path) -> list[str]:
    """Every table of the file (FTS shadow tables included; virtual tables are read through them), cell by cell."""
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL%'"
            )
        ]
        assert {
            "memories",
            "memory_fts_1_data",
            "memory_fts_1_idx",
            "task_digests",
            "working_sets",
            "evidence_fts_1_data",
        } <= set(tables)
        return [
            table
            for table in tables
            if any(_holds_secret(v) for row in conn.execute(f'SELECT * FROM "{table}"') for v in row)
        ]


def _file_bytes_hold_secret(db_path: Path) -> list[str]:
    files = [db_path, db_path.with_name(db_path.name + "-wal")]
    return [f.name for f in files if f.exists() and any(frag.encode("utf-8") in f.read_bytes() for frag in FRAGMENTS)]


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, tool_text(result)
    return result.structured_content or {}


async def _everything_an_agent_can_read(client: Client) -> str:
    texts = [
        tool_text(await client.call_tool("memory_search", {"query": "Zanzibar Quay parcel", "include_history": True})),
        tool_text(await client.call_tool("evidence_search", {"format": "json", "query": "Zanzibar Quay Oskarsson"})),
        tool_text(
            await client.call_tool(
                "build_working_set", {"format": "json", "task_id": "parcels", "focus": "deliver parcel Zanzibar"}
            )
        ),
        tool_text(await client.call_tool("checkpoint_load", {"format": "json", "task_id": "parcels"})),
    ]
    for uri in ("ctxkeep://tasks", "ctxkeep://tasks/parcels"):
        texts += [getattr(c, "text", "") for c in (await client.read_resource(uri)).contents]
    for prompt in ("resume", "handoff"):
        texts += [
            getattr(m.content, "text", "") for m in (await client.get_prompt(prompt, {"task_id": "parcels"})).messages
        ]
    return "\n".join(texts)


async def test_forget_removes_the_text_from_every_place_and_every_byte(db_path: Path) -> None:
    messages = [{"role": "user", "content": "Ship the parcels"}] + [
        {"role": "assistant" if i % 2 else "user", "content": f"step {i}: packed box {i}"} for i in range(1, 14)
    ]
    with anyio.fail_after(90):
        async with Client(stdio_params(db_path)) as client:
            await _call(client, "checkpoint_save", {"task_id": "parcels", "state": {"goal": "Ship the parcels"}})
            await _call(
                client,
                "memory_write",
                {
                    "kind": "user_preference",
                    "key": "delivery address",
                    "content": SECRET,
                    "explicit_confirmation": True,
                    "source_message_id": "msg-3",
                },
            )
            built = await _call(
                client, "build_working_set", {"format": "json", "task_id": "parcels", "focus": "deliver parcel address"}
            )
            assert SECRET in built["text"]
            compressed = await _call(
                client,
                "compress_history",
                {
                    "messages": messages,
                    "task_id": "parcels",
                    "keep_recent": 4,
                    "summary": f"Goal: Ship the parcels. The user asked: {SECRET}.",
                },
            )
            assert compressed["verification"]["ok"]
            assert _holds_secret(await _everything_an_agent_can_read(client))  # the checks below can fail
            assert {"memories", "task_digests", "working_sets"} <= set(_tables_holding_secret(db_path))

            gone = await _call(client, "memory_forget", {"key": "delivery address", "reason": "user asked to forget"})
            assert (gone["working_sets_cleared"], gone["digests_scrubbed"], gone["wal_cleared"]) == (1, 1, True)
            assert gone["still_quoted_in"] == [] and not _holds_secret(str(gone))

            assert not _holds_secret(await _everything_an_agent_can_read(client))
            assert _tables_holding_secret(db_path) == []
            assert _file_bytes_hold_secret(db_path) == []
            digest = await _call(client, "build_working_set", {"format": "json", "task_id": "parcels"})
            assert "[forgotten memory]" in digest["text"]  # the summary kept its other words


def _pid_reporting_params(db_path: Path, pid_file: Path) -> StdioServerParameters:
    """`ctxkeep serve` started through sh, which writes its pid and then becomes the server (exec)."""
    plain = stdio_params(db_path)
    return StdioServerParameters(
        command="/bin/sh",
        args=["-c", f'echo $$ > "{pid_file}"; exec "{sys.executable}" -m ctxkeep serve'],
        env=plain.env,
    )


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and /bin/sh are POSIX")
async def test_an_intent_survives_sigkill_and_is_reported_until_its_result(db_path: Path, tmp_path: Path) -> None:
    pid_file = tmp_path / "server.pid"
    with anyio.fail_after(90):
        connection = Client(_pid_reporting_params(db_path, pid_file))
        client = await connection.__aenter__()
        await _call(
            client,
            "checkpoint_save",
            {"task_id": "refunds", "state": {"goal": "Refund order 8812", "pending": ["refund"]}},
        )
        recorded = await _call(client, "action_intent", INTENT)
        assert recorded["recorded"]
        os.kill(int(pid_file.read_text()), signal.SIGKILL)  # dies between the intent and the result
        with pytest.raises(Exception):  # noqa: B017 (whatever the dead transport raises)
            await client.call_tool("checkpoint_list", {})
        try:
            await connection.__aexit__(None, None, None)
        except Exception:  # the transport reports the dead server on the way out
            pass

        async with Client(stdio_params(db_path)) as client:
            loaded = await _call(client, "checkpoint_load", {"format": "json", "task_id": "refunds"})
            assert [i["idempotency_key"] for i in loaded["resume_checks"]["open_intents"]] == [KEY]
            assert f"outcome unknown: look up `{KEY}` in the system of record before retrying" in loaded["brief"]
            built = await _call(client, "build_working_set", {"format": "json", "task_id": "refunds"})
            assert f"{KEY}: send refund → order 8812" in built["text"]
            again = await _call(client, "action_intent", INTENT)
            assert not again["recorded"] and "outcome unknown" in again["advice"]
            await _call(
                client, "action_result", {"idempotency_key": KEY, "status": "succeeded", "external_id": "re_77"}
            )
            after = await _call(client, "checkpoint_load", {"format": "json", "task_id": "refunds"})
            assert after["resume_checks"]["open_intents"] == [] and "outcome unknown" not in after["brief"]
    if not is_postgres(db_path):
        assert query(db_path, "PRAGMA integrity_check") == [("ok",)]
    assert [
        row[1:] for row in query(db_path, "SELECT project, status, external_id FROM actions") if row[0] == PROJECT
    ] == [("succeeded", "re_77")]


async def test_the_memory_gate_conflicts_expiry_and_bad_input_over_stdio(db_path: Path) -> None:
    preference = {
        "kind": "user_preference",
        "key": "report-format",
        "content": "Reports as tables",
        "explicit_confirmation": True,
        "source_message_id": "msg-12",
    }
    with anyio.fail_after(90):
        async with Client(stdio_params(db_path)) as client:
            guess = await client.call_tool("memory_write", {**preference, "kind": "speculation"})
            assert guess.is_error and "speculation is never stored" in tool_text(guess)
            unconfirmed = await client.call_tool("memory_write", {**preference, "explicit_confirmation": False})
            assert unconfirmed.is_error and "needs explicit_confirmation: true" in tool_text(unconfirmed)
            typo = await client.call_tool("memory_write", {**preference, "sourse_message_id": "msg-1"})
            assert typo.is_error and "sourse_message_id: unknown field" in tool_text(typo)
            first = await _call(client, "memory_write", preference)
            policy = await _call(
                client,
                "memory_write",
                {
                    "kind": "project_policy",
                    "key": "report-format",
                    "content": "Finance template",
                    "review_status": "approved",
                    "effective_at": "2026-01-01T00:00:00Z",
                    "owner": "cfo",
                },
            )
            assert (
                policy["conflict"]["previous"] == first["memory"]["memory_id"]
                and "outranks" in policy["conflict"]["reason"]
            )
            history = await _call(client, "memory_search", {"key": "report-format", "include_history": True})
            assert [(m["kind"], m["status"]) for m in history["memories"]] == [
                ("project_policy", "current"),
                ("user_preference", "superseded"),
            ]
            expiry = first["memory"]["expires_at"]
            later = await _call(
                client, "memory_search", {"kind": "user_preference", "as_of": expiry, "include_history": True}
            )
            assert [m["status"] for m in later["memories"]] == ["expired"]  # 180 days on, the preference has expired
            orphan = await client.call_tool("action_result", {"idempotency_key": "x:y:z", "status": "succeeded"})
            assert orphan.is_error and "no intent recorded" in tool_text(orphan)
            still = await _call(client, "memory_search", {"query": "finance template"})
            assert [m["content"] for m in still["memories"]] == ["Finance template"]
