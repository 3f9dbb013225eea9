"""End to end over real stdio: `ctxkeep serve` subprocesses driven by the MCP SDK client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.conftest import procurement_state, stdio_params, tool_text

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_the_whole_checkpoint_cycle_over_stdio(db_path: Path) -> None:
    with anyio.fail_after(60):
        async with Client(stdio_params(db_path)) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            assert {
                "checkpoint_save",
                "checkpoint_load",
                "checkpoint_list",
                "checkpoint_diff",
                "verify_checkpoint",
            } <= set(tools)
            assert (
                all(t.input_schema for t in tools.values())
                and tools["checkpoint_save"].output_schema
                and tools["checkpoint_load"].output_schema is None
            )

            v1 = await client.call_tool("checkpoint_save", {"task_id": "proc", "state": procurement_state()})
            assert v1.structured_content["version"] == 1
            moved = procurement_state(pending=[], completed=["Supplier C freight missing"])
            v2 = await client.call_tool("checkpoint_save", {"task_id": "proc", "state": moved, "expected_version": 1})
            assert v2.structured_content["version"] == 2
            assert v2.structured_content["parent_hash"] == v1.structured_content["hash"]

            latest = await client.call_tool("checkpoint_load", {"format": "json", "task_id": "proc"})
            assert latest.structured_content["state"]["completed"] == ["Supplier C freight missing"]
            first = await client.call_tool("checkpoint_load", {"format": "json", "task_id": "proc", "version": 1})
            assert first.structured_content["state"]["pending"] == ["Supplier C freight missing"]

            diff = await client.call_tool("checkpoint_diff", {"task_id": "proc", "from_version": 1, "to_version": 2})
            assert {(c["field"], c["op"]) for c in diff.structured_content["changes"]} == {
                ("pending", "removed"),
                ("completed", "added"),
            }
            listed = await client.call_tool("checkpoint_list", {})
            assert [(t["task_id"], t["latest_version"]) for t in listed.structured_content["tasks"]] == [("proc", 2)]


async def test_a_refusal_over_stdio_keeps_the_server_serving(db_path: Path) -> None:
    with anyio.fail_after(60):
        async with Client(stdio_params(db_path)) as client:
            await client.call_tool("checkpoint_save", {"task_id": "proc", "state": procurement_state()})
            refused = await client.call_tool(
                "checkpoint_save", {"task_id": "proc", "state": procurement_state(pending=[])}
            )
            assert refused.is_error and tool_text(refused).startswith("checkpoint_save refused: 1 violation(s)")
            assert "Traceback" not in tool_text(refused)
            again = await client.call_tool("checkpoint_load", {"format": "json", "task_id": "proc"})
            assert again.structured_content["version"] == 1


async def test_two_servers_on_one_file_exactly_one_save_wins(db_path: Path) -> None:
    results: dict[str, Any] = {}

    async def save_from(name: str, client: Client) -> None:
        state = procurement_state(next_action=f"written by {name}")
        results[name] = await client.call_tool(
            "checkpoint_save", {"task_id": "proc", "state": state, "expected_version": 1}
        )

    with anyio.fail_after(90):
        async with Client(stdio_params(db_path)) as first, Client(stdio_params(db_path)) as second:
            await first.call_tool("checkpoint_save", {"task_id": "proc", "state": procurement_state()})
            async with anyio.create_task_group() as group:
                group.start_soon(save_from, "first", first)
                group.start_soon(save_from, "second", second)
            winners = [name for name, result in results.items() if not result.is_error]
            losers = [name for name, result in results.items() if result.is_error]
            assert len(winners) == 1 and len(losers) == 1
            assert "current version is 2" in tool_text(results[losers[0]])
            latest = await second.call_tool("checkpoint_load", {"format": "json", "task_id": "proc"})
            assert latest.structured_content["version"] == 2
            assert latest.structured_content["state"]["next_action"] == f"written by {winners[0]}"
            v1 = await first.call_tool("checkpoint_load", {"format": "json", "task_id": "proc", "version": 1})
            assert v1.structured_content["state"]["next_action"] == "Ask for Supplier C freight"


async def test_a_corrupt_database_is_reported_by_every_call_and_the_server_keeps_serving(tmp_path: Path) -> None:
    broken = tmp_path / "broken.db"
    broken.write_bytes(b"not a database" * 300)
    with anyio.fail_after(60):
        async with Client(stdio_params(broken)) as client:
            for _ in range(2):
                result = await client.call_tool("checkpoint_list", {})
                assert result.is_error
                assert str(broken) in tool_text(result) and "not a valid ctxkeep database" in tool_text(result)
    assert broken.read_bytes() == b"not a database" * 300  # never overwritten


async def test_evidence_over_stdio_batch_get_search_resource_delete(db_path: Path) -> None:
    items = [
        {
            "content": f"pytest run {i}: 3 failed, 12 passed\nFAILED tests/test_freight.py::test_{i}",
            "source": "Bash",
            "tags": ["ci"],
        }
        for i in range(3)
    ]
    with anyio.fail_after(60):
        async with Client(stdio_params(db_path)) as client:
            put = await client.call_tool("evidence_put", {"items": items})
            refs = put.structured_content["refs"]
            assert len(set(refs)) == 3
            got = await client.call_tool(
                "evidence_get", {"format": "json", "ref": refs[1], "mode": "grep", "pattern": "FAILED", "context": 0}
            )
            assert got.structured_content["content"] == "2:FAILED tests/test_freight.py::test_1"
            hits = await client.call_tool(
                "evidence_search", {"format": "json", "query": "freight test failed", "tags": ["ci"]}
            )
            assert {h["ref"] for h in hits.structured_content["hits"]} == set(refs)
            resource = await client.read_resource(f"ctxkeep://evidence/{refs[0]}")
            assert resource.contents[0].text == items[0]["content"]
            deleted = await client.call_tool("evidence_delete", {"ref": refs[0]})
            assert deleted.structured_content["deleted"] is True
            after = await client.call_tool("evidence_search", {"format": "json", "query": "freight test failed"})
            assert {h["ref"] for h in after.structured_content["hits"]} == set(refs[1:])


async def test_a_working_set_over_stdio_in_both_formats(db_path: Path) -> None:
    with anyio.fail_after(60):
        async with Client(stdio_params(db_path)) as client:
            await client.call_tool("checkpoint_save", {"task_id": "proc", "state": procurement_state()})
            put = await client.call_tool(
                "evidence_put", {"content": "供应商C：运费每件0.48美元", "source": "邮件", "kind": "message"}
            )
            markdown = await client.call_tool(
                "build_working_set",
                {"format": "json", "task_id": "proc", "focus": "供应商C运费", "budget_tokens": 2_000},
            )
            assert not markdown.is_error and markdown.structured_content["tokens_total"] <= 2_000
            assert "运费每件0.48美元" in tool_text(markdown) and "Supplier C freight missing" in tool_text(markdown)
            assert markdown.structured_content["evidence_refs"] == [put.structured_content["ref"]]
            messages = await client.call_tool(
                "build_working_set",
                {"task_id": "proc", "format": "openai", "recent_messages": [{"role": "user", "content": "status?"}]},
            )
            assert messages.structured_content["messages"][-2] == {"role": "user", "content": "status?"}
            too_big = await client.call_tool(
                "build_working_set", {"format": "json", "task_id": "proc", "budget_tokens": 50_000}
            )
            assert too_big.is_error and "less than or equal to 25000" in tool_text(too_big)
