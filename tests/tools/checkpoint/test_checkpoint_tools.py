"""The checkpoint tools through the in-memory MCP client, on a real SQLite file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ctxkeep.server import build_server
from ctxkeep.settings import Settings
from tests.conftest import procurement_state, tool_text

pytestmark = pytest.mark.anyio


async def save(client: Client, state: dict[str, Any], task_id: str = "proc", **extra: Any) -> Any:
    return await client.call_tool("checkpoint_save", {"task_id": task_id, "state": state, **extra})


async def test_save_then_load_returns_the_same_state(client: Client) -> None:
    saved = await save(client, procurement_state())
    assert not saved.is_error
    assert saved.structured_content["version"] == 1
    assert saved.structured_content["parent_hash"] is None
    loaded = await client.call_tool("checkpoint_load", {"format": "json", "task_id": "proc"})
    state = loaded.structured_content["state"]
    assert state["pending"] == ["Supplier C freight missing"]
    assert state["facts"][0]["value"] == 0.48
    assert state["approvals"][0]["amount"] == 184300


async def test_versions_chain_by_hash(client: Client) -> None:
    first = (await save(client, procurement_state())).structured_content
    second = (
        await save(client, procurement_state(next_action="Compare landed cost"), expected_version=1)
    ).structured_content
    assert second["version"] == 2
    assert second["parent_hash"] == first["hash"]
    assert second["hash"] != first["hash"]


async def test_load_a_past_version(client: Client) -> None:
    await save(client, procurement_state())
    await save(client, procurement_state(next_action="Compare landed cost"), expected_version=1)
    old = (
        await client.call_tool("checkpoint_load", {"format": "json", "task_id": "proc", "version": 1})
    ).structured_content
    assert old["state"]["next_action"] == "Ask for Supplier C freight"
    assert old["resume_checks"]["is_latest"] is False
    assert any("latest is 2" in w for w in old["resume_checks"]["warnings"])


async def test_resume_checks_report_pending_approvals(client: Client) -> None:
    await save(client, procurement_state())
    loaded = await client.call_tool("checkpoint_load", {"format": "json", "task_id": "proc"})
    checks = loaded.structured_content["resume_checks"]
    assert [a["id"] for a in checks["pending_approvals"]] == ["PO-1"]
    assert checks["schema_compatible"] is True
    assert "PO-1" in tool_text(loaded) and "184300" in tool_text(loaded)


async def test_refused_save_lists_each_violation_and_stores_nothing(client: Client) -> None:
    await save(client, procurement_state())
    refused = await save(client, procurement_state(pending=[], facts=[]), expected_version=1)
    assert refused.is_error
    text = tool_text(refused)
    assert text.startswith("checkpoint_save refused: 2 violation(s)\n")
    assert "pending_unaccounted | Supplier C freight missing | " in text
    assert "fact_dropped | Supplier C freight | " in text
    latest = await client.call_tool("checkpoint_load", {"format": "json", "task_id": "proc"})
    assert latest.structured_content["version"] == 1


async def test_non_strict_save_stores_and_reports_violations(client: Client) -> None:
    await save(client, procurement_state())
    saved = await save(client, procurement_state(pending=[]), strict=False)
    assert not saved.is_error
    assert saved.structured_content["verification"]["ok"] is False
    assert saved.structured_content["verification"]["violations"][0]["rule"] == "pending_unaccounted"
    loaded = await client.call_tool("checkpoint_load", {"format": "json", "task_id": "proc"})
    assert loaded.structured_content["resume_checks"]["saved_with_violations"] == 1


async def test_goal_change_with_reason_is_accepted(client: Client) -> None:
    await save(client, procurement_state())
    saved = await save(client, procurement_state(goal="Compare 25 supplier quotes"), goal_change_reason="5 late quotes")
    assert saved.structured_content["version"] == 2


async def test_expected_version_conflict_names_the_current_version(client: Client) -> None:
    await save(client, procurement_state())
    await save(client, procurement_state(next_action="a"), expected_version=1)
    stale = await save(client, procurement_state(next_action="b"), expected_version=1)
    assert stale.is_error
    assert "current version is 2" in tool_text(stale)
    assert "expected_version=2" in tool_text(stale)


async def test_expected_version_zero_means_the_task_must_be_new(client: Client) -> None:
    assert not (await save(client, procurement_state(), expected_version=0)).is_error
    again = await save(client, procurement_state(next_action="x"), expected_version=0)
    assert again.is_error and "current version is 1" in tool_text(again)


async def test_resending_the_same_state_does_not_create_a_version(client: Client) -> None:
    await save(client, procurement_state())
    second = await save(client, procurement_state(next_action="a"), expected_version=1)
    retry = await save(client, procurement_state(next_action="a"), expected_version=1)
    assert retry.structured_content["version"] == 2
    assert retry.structured_content["hash"] == second.structured_content["hash"]
    listed = await client.call_tool("checkpoint_list", {})
    assert listed.structured_content["tasks"][0]["latest_version"] == 2


async def test_list_shows_tasks_newest_first(client: Client) -> None:
    await save(client, procurement_state(), task_id="a")
    await save(client, procurement_state(goal="Second task"), task_id="b")
    tasks = (await client.call_tool("checkpoint_list", {})).structured_content["tasks"]
    assert [t["task_id"] for t in tasks] == ["b", "a"]
    assert tasks[0]["pending"] == 1 and tasks[0]["pending_approvals"] == 1


async def test_diff_reports_moved_items(client: Client) -> None:
    await save(client, procurement_state())
    await save(client, procurement_state(pending=[], completed=["Supplier C freight missing"]), expected_version=1)
    changes = (
        await client.call_tool("checkpoint_diff", {"task_id": "proc", "from_version": 1, "to_version": 2})
    ).structured_content["changes"]
    assert {
        "field": "pending",
        "op": "removed",
        "item": "Supplier C freight missing",
        "before": None,
        "after": None,
    } in changes
    assert any(c["field"] == "completed" and c["op"] == "added" for c in changes)


async def test_verify_two_stored_versions(client: Client) -> None:
    await save(client, procurement_state())
    await save(client, procurement_state(pending=[]), strict=False)
    result = await client.call_tool("verify_checkpoint", {"task_id": "proc", "from_version": 1, "to_version": 2})
    assert result.structured_content["ok"] is False
    assert [v["rule"] for v in result.structured_content["violations"]] == ["pending_unaccounted"]


async def test_verify_two_states_without_storing(client: Client) -> None:
    result = await client.call_tool(
        "verify_checkpoint", {"before": procurement_state(), "after": procurement_state(decisions=[])}
    )
    assert [v["rule"] for v in result.structured_content["violations"]] == ["decision_dropped"]
    assert (await client.call_tool("checkpoint_list", {})).structured_content["tasks"] == []


async def test_chinese_text_round_trips_unchanged(client: Client) -> None:
    state = procurement_state(
        goal="比较20家供应商的报价",
        constraints=["数据完整之前不能给出最终推荐"],
        pending=["供应商C的运费缺失"],
        extra={"备注": "单位：美元/件"},
    )
    await save(client, state, task_id="采购-任务")
    loaded = (await client.call_tool("checkpoint_load", {"format": "json", "task_id": "采购-任务"})).structured_content
    assert loaded["state"]["goal"] == "比较20家供应商的报价"
    assert loaded["state"]["constraints"] == ["数据完整之前不能给出最终推荐"]
    assert loaded["state"]["extra"] == {"备注": "单位：美元/件"}
    assert "供应商C的运费缺失" in loaded["brief"]


async def test_tools_are_listed_with_schemas_and_honest_annotations(client: Client) -> None:
    tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"checkpoint_save", "checkpoint_load", "checkpoint_list", "checkpoint_diff", "verify_checkpoint"} <= set(
        tools
    )
    text_tools = {
        "checkpoint_load",
        "evidence_get",
        "evidence_search",
        "build_working_set",
    }  # text by default: no outputSchema
    for tool in tools.values():
        assert (tool.output_schema is None) == (tool.name in text_tools) and tool.input_schema["type"] == "object"
        assert tool.description and len(tool.description) < 400
    writers = {
        "checkpoint_save",
        "checkpoint_load",  # checkpoint_load with an owner claims the task's lease
        "evidence_put",
        "evidence_delete",
        "compress_history",
        "build_working_set",
        "memory_write",
        "memory_forget",
        "action_intent",
        "action_result",
    }
    assert all(tools[name].annotations.read_only_hint is False for name in writers & set(tools))
    assert all(tools[name].annotations.read_only_hint for name in set(tools) - writers)


async def test_projects_on_one_file_never_see_each_others_tasks(db_path: Path) -> None:
    async with Client(build_server(Settings(db_path=db_path, project="/projects/one"))) as one:
        await save(one, procurement_state(), task_id="shared-name")
    async with Client(build_server(Settings(db_path=db_path, project="/projects/two"))) as two:
        assert (await two.call_tool("checkpoint_list", {})).structured_content["tasks"] == []
        missing = await two.call_tool("checkpoint_load", {"format": "json", "task_id": "shared-name"})
        assert missing.is_error and "no task 'shared-name'" in tool_text(missing)
        await save(two, procurement_state(goal="Project two's goal"), task_id="shared-name")
    async with Client(build_server(Settings(db_path=db_path, project="/projects/one"))) as one:
        loaded = (
            await one.call_tool("checkpoint_load", {"format": "json", "task_id": "shared-name"})
        ).structured_content
        assert loaded["state"]["goal"] == "Compare 20 supplier quotes" and loaded["version"] == 1


async def test_resources_and_resume_prompt(client: Client) -> None:
    await save(client, procurement_state())
    tasks = await client.read_resource("ctxkeep://tasks")
    assert '"task_id":"proc"' in tasks.contents[0].text
    brief = await client.read_resource("ctxkeep://tasks/proc")
    assert "Supplier C freight missing" in brief.contents[0].text
    prompt = await client.get_prompt("resume", {"task_id": "proc"})
    assert "expected_version=1" in prompt.messages[0].content.text


async def test_verify_across_versions_respects_what_each_step_declared(client: Client) -> None:
    await save(client, procurement_state())
    declared = procurement_state(
        goal="Compare 25 supplier quotes",
        constraints=[],
        dropped=[
            {
                "kind": "constraint",
                "item": "No final recommendation before the data is complete",
                "reason": "data complete",
            }
        ],
    )
    await save(client, declared, goal_change_reason="5 late quotes")
    await save(client, {**declared, "next_action": "Compare landed cost"})
    result = await client.call_tool("verify_checkpoint", {"task_id": "proc", "from_version": 1, "to_version": 3})
    assert result.structured_content == {"ok": True, "violations": []}
    backwards = await client.call_tool("verify_checkpoint", {"task_id": "proc", "from_version": 3, "to_version": 1})
    assert backwards.is_error and "send the older version first" in tool_text(backwards)


async def test_refusal_lines_stay_one_per_violation_whatever_the_item_holds(client: Client) -> None:
    await save(client, procurement_state(pending=["Ship batch 2\nx | fake_rule | y"]))
    refused = await save(client, procurement_state(pending=[]))
    lines = tool_text(refused).splitlines()
    assert lines[0] == "checkpoint_save refused: 1 violation(s)"
    assert len(lines) == 2 and lines[1].startswith("pending_unaccounted | Ship batch 2\\nx \\| fake_rule \\| y | ")


async def test_verify_a_summary_against_its_state(client: Client) -> None:
    state = procurement_state()
    summary = (
        "Goal: Compare 20 supplier quotes. No final recommendation before the data is complete. "
        "Pending: Supplier C freight missing. Freight 0.48 USD/piece. PO-1 for 184,300 USD waits for the director."
    )
    ok = await client.call_tool("verify_checkpoint", {"state": state, "summary": summary})
    assert ok.structured_content == {"ok": True, "violations": []}
    bad = await client.call_tool("verify_checkpoint", {"state": state, "summary": summary.replace("0.48", "0.84")})
    assert [v["rule"] for v in bad.structured_content["violations"]] == ["summary_fact_missing"]


async def test_handoff_and_compress_prompts_come_from_the_checkpoint(client: Client) -> None:
    await save(client, procurement_state(assumptions=["Supplier C will confirm by Friday"]))
    handoff = (await client.get_prompt("handoff", {"task_id": "proc"})).messages[0].content.text
    assert "## Remaining, in priority order\n- Supplier C freight missing" in handoff
    assert "Supplier C freight = 0.48 USD/piece (source: mail-1)" in handoff
    assert "## Assumptions (not verified)\n- Supplier C will confirm by Friday" in handoff
    assert (
        "approval PO-1 is pending" in handoff and "precondition" not in handoff
    )  # the next action does not issue the PO
    compress = (await client.get_prompt("compress", {"task_id": "proc"})).messages[0].content.text
    assert "Keep with its negation: No final recommendation before the data is complete" in compress
    assert "Copy exactly: Supplier C freight = 0.48 USD/piece" in compress
    with pytest.raises(Exception, match="no task 'ghost'"):
        await client.get_prompt("handoff", {"task_id": "ghost"})


async def test_a_huge_state_gives_a_brief_within_6000_tokens(client: Client) -> None:
    from ctxkeep.tokens import count_tokens

    state = procurement_state(
        pending=[f"pending item {i}: " + "detail " * 120 for i in range(150)],
        constraints=[f"Constraint {i} must hold " + "x " * 100 for i in range(40)],
    )
    assert not (await save(client, state)).is_error
    loaded = (await client.call_tool("checkpoint_load", {"format": "json", "task_id": "proc"})).structured_content
    assert count_tokens(loaded["brief"]) <= 6_000
    assert "more (checkpoint_load returns the whole state)" in loaded["brief"]
    assert len(loaded["state"]["pending"]) == 150  # the state itself is whole
    handoff = (await client.get_prompt("handoff", {"task_id": "proc"})).messages[0].content.text
    assert count_tokens(handoff) <= 6_000


async def test_prompts_default_to_the_active_task_and_task_ids_complete(client: Client) -> None:
    from mcp.types import PromptReference, ResourceTemplateReference

    with pytest.raises(Exception, match="no task in this project"):
        await client.get_prompt("resume", {})
    await save(client, procurement_state())
    await client.call_tool("checkpoint_save", {"task_id": "proc-2", "state": {"goal": "Second task"}})
    await client.call_tool("checkpoint_save", {"task_id": "other", "state": {"goal": "Third task"}})
    resumed = (await client.get_prompt("resume", {})).messages[0].content.text
    assert "You are resuming task 'other'" in resumed  # the task saved last
    compress = (await client.get_prompt("compress", {})).messages[0].content.text
    assert "Third task" in compress
    by_prompt = await client.complete(PromptReference(name="handoff"), {"name": "task_id", "value": "pro"})
    assert sorted(by_prompt.completion.values) == ["proc", "proc-2"]
    by_resource = await client.complete(
        ResourceTemplateReference(uri="ctxkeep://tasks/{task_id}"), {"name": "task_id", "value": "OTH"}
    )
    assert by_resource.completion.values == ["other"]
    nothing = await client.complete(PromptReference(name="handoff"), {"name": "other_argument", "value": "p"})
    assert nothing.completion.values == []


def test_the_instructions_say_when_to_checkpoint_and_to_offload() -> None:
    from ctxkeep.server.instructions import INSTRUCTIONS

    for phrase in (
        "semantic boundary",
        "before a risky step",
        "evidence_put",
        "action_intent",
        "build_working_set",
        "memory_write",
    ):
        assert phrase in INSTRUCTIONS, phrase
    assert len(INSTRUCTIONS) <= 2_000  # Claude Code cut them at 2,048 characters before 2.1.332
