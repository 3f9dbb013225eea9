"""What the model sees, in-process: lean advertised schemas, text results by default, readable scores (issue 17).

The same over the real Claude Code, Codex and Gemini CLIs: tests/e2e/test_model_view.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp import Client

from ctxkeep.tokens import count_tokens
from tests.conftest import procurement_state, tool_text

pytestmark = pytest.mark.anyio


def _walk(node: Any) -> list[dict[str, Any]]:
    if isinstance(node, dict):
        return [
            node,
            *[
                n
                for key, value in node.items()
                for n in (_walk(value) if key != "properties" else [m for v in value.values() for m in _walk(v)])
            ],
        ]
    return [n for item in node for n in _walk(item)] if isinstance(node, list) else []


async def test_the_advertised_schemas_are_lean_and_fit_4000_tokens(client: Client) -> None:
    tools = (await client.list_tools()).tools
    schemas = [node for tool in tools for node in _walk(tool.input_schema)]
    assert not [n for n in schemas if "title" in n], "no titles"
    assert not [n for n in schemas if {"type": "null"} in n.get("anyOf", [])], "no anyOf with null"
    assert not [n for n in schemas if "default" in n and n["default"] in (None, [], {})], "no empty defaults"
    total = sum(
        count_tokens(
            json.dumps(
                {"name": f"mcp__ctxkeep__{t.name}", "description": t.description, "input_schema": t.input_schema},
                separators=(",", ":"),
            )
        )
        for t in tools
    )
    assert total <= 4_000
    verify = next(t for t in tools if t.name == "verify_checkpoint").input_schema
    assert verify["properties"]["before"] == {
        "type": "object",
        "description": "A TaskState: the shape of checkpoint_save's `state`.",
    }


async def test_unknown_arguments_are_still_refused_by_name_and_validation_stays_strict(client: Client) -> None:
    unknown = await client.call_tool(
        "checkpoint_save", {"task_id": "proc", "state": procurement_state(), "colour": "red"}
    )
    assert unknown.is_error and "- colour: unknown field; remove it" in tool_text(unknown)
    nested = await client.call_tool(
        "checkpoint_save", {"task_id": "proc", "state": {**procurement_state(), "mood": "ok"}}
    )
    assert nested.is_error and "state.mood: unknown field" in tool_text(nested)
    too_long = await client.call_tool(
        "checkpoint_save", {"task_id": "proc", "state": procurement_state(goal="g" * 5_000)}
    )
    assert too_long.is_error and "over the 4,000-character limit" in tool_text(too_long)


async def test_text_tools_answer_with_text_only_unless_json_is_asked_for(client: Client) -> None:
    await client.call_tool("checkpoint_save", {"task_id": "proc", "state": procurement_state()})
    brief = await client.call_tool("checkpoint_load", {"task_id": "proc"})
    assert brief.structured_content is None and tool_text(brief).startswith("# Resume: proc (v1")
    structured = await client.call_tool("checkpoint_load", {"task_id": "proc", "format": "json"})
    assert structured.structured_content["state"]["goal"] == "Compare 20 supplier quotes" and tool_text(
        structured
    ) == tool_text(brief)
    built = await client.call_tool("build_working_set", {"task_id": "proc", "budget_tokens": 2_000})
    assert built.structured_content is None and tool_text(built).startswith("# Task proc")
    saved = await client.call_tool(
        "checkpoint_save", {"task_id": "proc", "state": procurement_state(), "expected_version": 1}
    )
    assert saved.structured_content["version"] == 1  # data tools keep their structured result


async def test_the_working_set_text_carries_the_compress_advice_within_3_percent(client: Client) -> None:
    await client.call_tool("checkpoint_save", {"task_id": "proc", "state": procurement_state(), "trigger": "semantic"})
    built = tool_text(await client.call_tool("build_working_set", {"task_id": "proc", "budget_tokens": 2_000}))
    assert built.rstrip().endswith("the history was not compressed since]") and "[ctxkeep compress advice:" in built
    assert count_tokens(built) <= 2_000 * 1.03
    tiny = tool_text(await client.call_tool("build_working_set", {"task_id": "proc", "budget_tokens": 300}))
    assert "compress advice" not in tiny  # the line does not fit 3% of 300 tokens: left out, the budget holds


async def test_search_scores_are_relative_to_the_best_hit_with_a_rank(client: Client) -> None:
    for text in (
        "freight 0.48 USD per piece, freight confirmed",
        "freight mentioned once among many other words here",
        "unrelated",
    ):
        await client.call_tool("evidence_put", {"content": text})
    hits = (await client.call_tool("evidence_search", {"query": "freight", "format": "json"})).structured_content[
        "hits"
    ]
    assert [h["rank"] for h in hits] == [1, 2] and hits[0]["score"] == 1.0 and 0 < hits[1]["score"] < 1
    text = tool_text(await client.call_tool("evidence_search", {"query": "freight"}))
    assert text.startswith("1. ev_") and "(1.00 of the best)" in text and "e-0" not in text
