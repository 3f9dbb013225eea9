"""Bad input to the evidence tools: a clear error saying what to send, the server keeps serving, nothing changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ctxkeep.server import build_server
from ctxkeep.settings import Settings
from tests.conftest import PROJECT, tool_text
from tests.db_dump import query

pytestmark = pytest.mark.anyio

REF = "ev_000000000000000000000000"
BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("evidence_put", {}, "send either content (one item) or items (a batch)"),
    ("evidence_put", {"content": "x", "items": [{"content": "y"}]}, "send either content (one item) or items"),
    ("evidence_put", {"items": []}, "items is empty"),
    ("evidence_put", {"items": [{"content": "x"}] * 1001}, "at most 1,000 items"),
    ("evidence_put", {"content": "x" * 2_000}, "over the 1,000 byte limit"),
    ("evidence_put", {"content": "ok", "kind": "photo"}, "kind: Input should be 'tool_result'"),
    ("evidence_put", {"content": "ok", "tags": ["two words"]}, "tags are single words"),
    (
        "evidence_put",
        {"content": "ok", "effective_at": "2026-02-01T00:00:00Z", "expires_at": "2026-01-01T00:00:00Z"},
        "expires_at must be later than effective_at",
    ),
    ("evidence_put", {"content": "ok", "expires_at": "next tuesday"}, "expires_at: Input should be a valid datetime"),
    ("evidence_put", {"items": [{"content": "ok", "colour": "red"}]}, "items.0.colour: unknown field"),
    ("evidence_put", {"content": "bad \ud800 text"}, "content is not valid UTF-8 text"),
    ("evidence_get", {"ref": "not-a-ref"}, "ref: String should match pattern"),
    ("evidence_get", {"ref": REF}, "no evidence 'ev_000000000000000000000000'"),
    ("evidence_get", {"ref": "KNOWN", "mode": "grep"}, "mode 'grep' needs a pattern"),
    ("evidence_get", {"ref": "KNOWN", "mode": "chunk"}, "mode 'chunk' needs chunk"),
    ("evidence_get", {"ref": "KNOWN", "mode": "grep", "pattern": "[a-"}, "not a valid regular expression"),
    (
        "evidence_get",
        {"ref": "KNOWN", "mode": "lines", "start": 0},
        "start: Input should be greater than or equal to 1",
    ),
    (
        "evidence_get",
        {"ref": "KNOWN", "max_tokens": 100_000},
        "max_tokens: Input should be less than or equal to 25000",
    ),
    ("evidence_get", {"ref": "KNOWN", "mode": "everything"}, "mode: Input should be 'full'"),
    ("evidence_search", {"query": ""}, "query: String should have at least 1 character"),
    ("evidence_search", {"query": "x", "limit": 500}, "limit: Input should be less than or equal to 50"),
    ("evidence_search", {"query": "x", "as_of": "yesterday"}, "as_of: Input should be a valid datetime"),
    ("evidence_delete", {"ref": REF}, "no evidence"),
    ("evidence_delete", {"ref": "ev_"}, "ref: String should have at least 4 characters"),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"), BAD_CALLS, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(BAD_CALLS)]
)
async def test_bad_evidence_input_gets_a_clear_error_and_changes_nothing(
    db_path: Path, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with Client(build_server(Settings(db_path=db_path, project=PROJECT, max_evidence_bytes=1_000))) as client:
        known = (await client.call_tool("evidence_put", {"content": "line 1\nline 2\n"})).structured_content["ref"]
        arguments = {k: (known if v == "KNOWN" else v) for k, v in arguments.items()}

        result = await client.call_tool(tool, arguments)

        assert result.is_error
        text = tool_text(result)
        assert expected in text, text
        assert "Traceback" not in text and "errors.pydantic.dev" not in text
        still = await client.call_tool("evidence_get", {"format": "json", "ref": known})
        assert still.structured_content["content"] == "line 1\nline 2\n"
    assert query(db_path, "SELECT count(*) FROM evidence") == [(1,)]
