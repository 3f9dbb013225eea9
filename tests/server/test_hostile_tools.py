"""Hostile arguments to every tool (random JSON, deep nesting, huge strings, NUL, lone surrogates, unknown fields):
each call either succeeds or fails with ctxkeep's own message — never a traceback, never the SDK's bare "Error executing
tool" that no agent can act on — and the server keeps serving. Transcripts with invalid UTF-8 on disk are read too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from ctxkeep.models.compress import CompressRequest
from ctxkeep.server import build_server
from ctxkeep.settings import Settings
from ctxkeep.storage import open_store
from ctxkeep.tools.compression.compress import compress_history
from ctxkeep.tools.scope import Scope
from ctxkeep.tool_names import TOOL_NAMES
from tests.conftest import PROJECT, tool_text

TOOLS = sorted(TOOL_NAMES)  # every tool the server lists (tests/clients/test_tool_names.py compares the two)
FIELDS = [
    "task_id",
    "state",
    "version",
    "expected_version",
    "from_version",
    "to_version",
    "content",
    "items",
    "ref",
    "mode",
    "query",
    "messages",
    "focus",
    "budget_tokens",
    "slot_budgets",
    "recent_messages",
    "kind",
    "key",
    "memory_id",
    "idempotency_key",
    "action",
    "target",
    "status",
    "goal",
    "pending",
    "summary",
    "before",
    "after",
    "transcript_path",
    "format",
    "extra_field",
]
text = st.one_of(
    st.text(max_size=30), st.just("\x00"), st.just("\ud800 lone"), st.just("x" * 5_000), st.just("ev_" + "0" * 24)
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**20), 10**20) | st.floats(allow_nan=True) | text,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=25,
)
deep = st.integers(50, 400).map(lambda depth: json.loads("[" * depth + "]" * depth))
arguments = st.dictionaries(st.sampled_from(FIELDS), json_values | deep, max_size=5)


async def _call_all(db_path: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[str]:
    problems = []
    async with Client(build_server(Settings(db_path=db_path, project=PROJECT))) as client:
        for tool, args in calls:
            try:
                result = await client.call_tool(tool, args)
            except ValueError as exc:  # the client itself cannot serialize it (nesting beyond its limit): never sent
                assert "depth" in str(exc)
                continue
            text_out = tool_text(result)
            if result.is_error and ("Traceback" in text_out or text_out.startswith("Error executing tool")):
                problems.append(f"{tool}({json.dumps(args, default=str)[:300]}) -> {text_out[:300]}")
        listed = await client.call_tool("checkpoint_list", {})  # still serving
        assert not listed.is_error
    return problems


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(calls=st.lists(st.tuples(st.sampled_from(TOOLS), arguments), min_size=1, max_size=8))
def test_random_arguments_to_every_tool_never_reach_the_client_as_a_traceback(
    tmp_path_factory: pytest.TempPathFactory, calls: list[tuple[str, dict[str, Any]]]
) -> None:
    db_path = tmp_path_factory.mktemp("hostile") / "ctxkeep.db"
    assert anyio.run(_call_all, db_path, calls) == []


@pytest.mark.anyio
async def test_a_transcript_with_invalid_utf8_on_disk_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    transcript = tmp_path / "session.jsonl"
    good = [
        json.dumps({"type": "user", "message": {"role": "user", "content": f"step {i}: fix the build"}})
        for i in range(20)
    ]
    transcript.write_bytes(
        b"\xff\xfe garbage\n" + "\n".join(good).encode() + b'\n\x80\x81\n{"type": "user", "message": \xc3\x28}\n'
    )
    store = await open_store(tmp_path / "db.sqlite")
    try:
        result = await compress_history(
            Scope(store=store, project=str(tmp_path)),
            CompressRequest(transcript_path=str(transcript)),
            env={"HOME": str(tmp_path)},
        )
    finally:
        await store.close()
    assert result.tokens_before > 0 and result.skipped_records >= 2
