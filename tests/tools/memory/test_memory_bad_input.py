"""Bad input to the memory and journal tools, field by field: a clear error saying what to send, the server keeps
serving, nothing stored changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ctxkeep.server import build_server
from ctxkeep.settings import Settings
from tests.conftest import PROJECT, tool_text
from tests.db_dump import MEMORY_INDEX, stored
from tests.tools.journal.test_journal import INTENT, KEY
from tests.tools.memory.test_memory import POLICY, PREFERENCE

pytestmark = pytest.mark.anyio
FACT = {"kind": "task_fact", "key": "refund id", "content": "The refund id is re_77"}
OK_RESULT = {"idempotency_key": KEY, "status": "succeeded"}
BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("memory_write", {**PREFERENCE, "kind": "rumour"}, "kind: Input should be 'user_preference'"),
    ("memory_write", {**PREFERENCE, "kind": "speculation"}, "speculation is never stored as memory"),
    ("memory_write", {**PREFERENCE, "key": " "}, "key: must not be empty"),
    ("memory_write", {**PREFERENCE, "key": "k" * 201}, "key: String should have at most 200 characters"),
    ("memory_write", {**PREFERENCE, "key": "a\x00b"}, "key: control character U+0000"),
    ("memory_write", {**PREFERENCE, "content": ""}, "content: must not be empty"),
    ("memory_write", {**PREFERENCE, "content": "x" * 4001}, "content: String should have at most 4000 characters"),
    ("memory_write", {**PREFERENCE, "content": "bad \ud800 text"}, "content: Input should be a valid string"),
    ("memory_write", {**PREFERENCE, "confidence": 1.5}, "confidence: Input should be less than or equal to 1"),
    ("memory_write", {**PREFERENCE, "confidence": 0.2}, "confidence 0.2 is below 0.5, which is speculation"),
    (
        "memory_write",
        {**PREFERENCE, "explicit_confirmation": "maybe"},
        "explicit_confirmation: Input should be a valid boolean",
    ),
    ("memory_write", {**PREFERENCE, "source_message_id": None}, "needs source_message_id"),
    ("memory_write", {**PREFERENCE, "source_message_id": "m\x1b"}, "source_message_id: control character U+001B"),
    (
        "memory_write",
        {**FACT, "evidence_ref": "ev_0123456789abcdef01234567"},
        "evidence_ref 'ev_0123456789abcdef01234567' is not stored",
    ),
    ("memory_write", {**FACT, "task_id": "", "source_version": 1}, "task_id: String should have at least 1 character"),
    (
        "memory_write",
        {**FACT, "task_id": "refunds", "source_version": 0},
        "source_version: Input should be greater than or equal to 1",
    ),
    ("memory_write", {**FACT, "task_id": "refunds", "source_version": 9}, "task 'refunds' has versions 1 to 1"),
    ("memory_write", {**POLICY, "review_status": "ok"}, "review_status: Input should be 'draft'"),
    ("memory_write", {**POLICY, "effective_at": "soon"}, "effective_at: Input should be a valid datetime"),
    ("memory_write", {**POLICY, "owner": ""}, "a project_policy needs owner"),
    (
        "memory_write",
        {**POLICY, "expires_at": "2020-01-01T00:00:00Z"},
        "expires_at 2020-01-01T00:00:00+00:00 is not after now",
    ),
    (
        "memory_write",
        {**PREFERENCE, "expires_at": "2020-01-01T00:00:00Z"},
        "expires_at 2020-01-01T00:00:00+00:00 is not after now",
    ),
    (
        "memory_write",
        {**POLICY, "effective_at": "2027-01-01T00:00:00Z", "expires_at": "2026-12-31T00:00:00Z"},
        "is not after effective_at",
    ),
    ("memory_write", {**PREFERENCE, "colour": "red"}, "colour: unknown field; remove it"),
    (
        "memory_write",
        {**PREFERENCE, "effective_at": "9999-12-30T00:00:00Z"},
        "the user_preference lifetime (180 days) from effective_at 9999-12-30 ends after the year 9999",
    ),
    (
        "memory_write",
        {**PREFERENCE, "effective_at": "9999-12-31T23:00:00-05:00"},
        "effective_at: the time is out of range",
    ),
    ("memory_write", {**PREFERENCE, "task_id": "re\u202efund"}, "task_id: invisible formatting character U+202E"),
    ("memory_search", {"query": "the and of"}, "has no searchable words"),
    ("memory_search", {"query": "x" * 4001}, "query: String should have at most 4000 characters"),
    ("memory_search", {"kind": "speculation"}, "kind: Input should be 'user_preference'"),
    ("memory_search", {"key": ""}, "key: must not be empty"),
    ("memory_search", {"include_history": "sometimes"}, "include_history: Input should be a valid boolean"),
    ("memory_search", {"as_of": "yesterday"}, "as_of: Input should be a valid datetime"),
    ("memory_search", {"limit": 0}, "limit: Input should be greater than or equal to 1"),
    ("memory_forget", {}, "send exactly one of memory_id (forget that version) or key"),
    ("memory_forget", {"memory_id": "mem_0000000000000000", "key": "report-format"}, "send exactly one of memory_id"),
    ("memory_forget", {"memory_id": "mem_0000000000000000"}, "no memory 'mem_0000000000000000' in this project"),
    ("memory_forget", {"key": "k" * 201}, "key: String should have at most 200 characters"),
    ("memory_forget", {"key": "report-format", "reason": "r\x07"}, "reason: control character U+0007"),
    ("action_intent", {**INTENT, "task_id": ""}, "task_id: String should have at least 1 character"),
    ("action_intent", {**INTENT, "idempotency_key": " "}, "idempotency_key: must not be empty"),
    (
        "action_intent",
        {**INTENT, "idempotency_key": "k" * 201},
        "idempotency_key: String should have at most 200 characters",
    ),
    ("action_intent", {**INTENT, "action": ""}, "action: must not be empty"),
    ("action_intent", {k: v for k, v in INTENT.items() if k != "target"}, "target: required field is missing"),
    (
        "action_intent",
        {**INTENT, "params_summary": "p" * 4001},
        "params_summary: String should have at most 4000 characters",
    ),
    ("action_intent", {**INTENT, "target": "order 9001"}, "already names another side effect"),
    (
        "action_intent",
        {**INTENT, "task_id": "refund", "idempotency_key": "typo:task:key"},
        "no task 'refund' in this project",
    ),
    (
        "action_result",
        {**OK_RESULT, "idempotency_key": "never:sent:intent"},
        "no intent recorded for 'never:sent:intent'",
    ),
    ("action_result", {**OK_RESULT, "status": "done"}, "status: Input should be 'succeeded', 'failed' or 'cancelled'"),
    (
        "action_result",
        {**OK_RESULT, "external_id": "e" * 4001},
        "external_id: String should have at most 4000 characters",
    ),
    (
        "action_result",
        {**OK_RESULT, "receipt_ref": "ev_0123456789abcdef01234567"},
        "receipt_ref 'ev_0123456789abcdef01234567' is not stored",
    ),
    ("action_result", {**OK_RESULT, "detail": "x\x1b[31m"}, "detail: control character U+001B"),
    (
        "checkpoint_save",
        {"task_id": "refunds", "state": {"goal": "g"}, "expected_verison": 1},
        "expected_verison: unknown field",
    ),
]


def _stored(db_path: Path) -> tuple[Any, ...]:
    """Every row a memory or journal call could touch (the project's memory index too: FTS5's shadow table, the
    PostgreSQL postings)."""
    return stored(
        db_path,
        [
            "memories",
            "memory_tombstones",
            MEMORY_INDEX,
            "actions",
            "checkpoints",
            "working_sets",
            "task_digests",
            "evidence",
        ],
    )


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"), BAD_CALLS, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(BAD_CALLS)]
)
async def test_bad_memory_and_journal_input_gets_a_clear_error_and_changes_nothing(
    db_path: Path, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with Client(build_server(Settings(db_path=db_path, project=PROJECT))) as client:
        await client.call_tool("checkpoint_save", {"task_id": "refunds", "state": {"goal": "Refund order 8812"}})
        await client.call_tool("memory_write", PREFERENCE)
        await client.call_tool("action_intent", INTENT)
        before = _stored(db_path)

        result = await client.call_tool(tool, arguments)

        assert result.is_error
        text = tool_text(result)
        assert expected in text, text
        assert "Traceback" not in text and "errors.pydantic.dev" not in text
        assert _stored(db_path) == before
        still = await client.call_tool("memory_search", {"key": "report-format"})  # the server keeps serving
        assert [m["content"] for m in still.structured_content["memories"]] == [PREFERENCE["content"]]
