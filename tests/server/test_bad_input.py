"""Bad input to every tool: a clear error that says what to send, the server keeps serving, nothing stored changes."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from ctxkeep.models import MAX_ITEMS, MAX_STATE_BYTES
from tests.conftest import procurement_state, tool_text

pytestmark = pytest.mark.anyio

BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("checkpoint_load", {"task_id": "nope"}, "call checkpoint_list"),
    ("checkpoint_load", {"task_id": "proc", "version": 9}, "versions 1 to 1"),
    ("checkpoint_load", {"task_id": "proc", "version": 0}, "version: Input should be greater than or equal to 1"),
    ("checkpoint_load", {"task_id": "proc", "version": "latest"}, "version: Input should be a valid integer"),
    ("checkpoint_load", {}, "task_id: required field is missing"),
    ("checkpoint_save", {"task_id": "proc", "state": "goal: x"}, "state: must be a JSON object"),
    ("checkpoint_save", {"task_id": "proc", "state": {"goal": "   "}}, "state.goal: must not be empty"),
    ("checkpoint_save", {"task_id": "proc", "state": {"goal": "x\u0007y"}}, "control character U+0007"),
    (
        "checkpoint_save",
        {"task_id": "proc", "state": {"goal": "g", "pending": ["a", ""]}},
        "list items must not be empty",
    ),
    (
        "checkpoint_save",
        {"task_id": "proc", "state": {"goal": "g", "pending": "a"}},
        "state.pending: Input should be a valid list",
    ),
    (
        "checkpoint_save",
        {"task_id": "proc", "state": {"goal": "g", "facts": [{"key": "k"}]}},
        "state.facts.0.value: required field is missing",
    ),
    (
        "checkpoint_save",
        {"task_id": "proc", "state": {"goal": "g", "approvals": [{"id": "A", "action": "pay", "status": "done"}]}},
        "'pending', 'approved' or 'rejected'",
    ),
    ("checkpoint_save", {"task_id": "proc", "state": {"goal": "g", "colour": "red"}}, "state.colour: unknown field"),
    (
        "checkpoint_save",
        {"task_id": "proc", "state": {"goal": "g", "pending": ["p"] * 2 + [f"p{i}" for i in range(MAX_ITEMS)]}},
        f"at most {MAX_ITEMS} items",
    ),
    (
        "checkpoint_save",
        {"task_id": "proc", "state": {"goal": "g", "extra": {"blob": "x" * MAX_STATE_BYTES}}},
        f"over the {MAX_STATE_BYTES:,} limit",
    ),
    ("checkpoint_save", {"task_id": "proc", "state": {"goal": "g" * 5000}}, "over the 4,000-character limit"),
    ("checkpoint_save", {"task_id": "", "state": {"goal": "g"}}, "task_id: String should have at least 1 character"),
    (
        "checkpoint_save",
        {"task_id": "proc", "state": {"goal": "g"}, "trigger": "whenever"},
        "trigger: Input should be 'manual'",
    ),
    (
        "checkpoint_save",
        {"task_id": "proc", "state": {"goal": "g"}, "expected_version": -1},
        "expected_version: Input should be greater than or equal to 0",
    ),
    ("checkpoint_list", {"limit": 0}, "limit: Input should be greater than or equal to 1"),
    ("checkpoint_diff", {"task_id": "proc", "from_version": 1, "to_version": 5}, "versions 1 to 1"),
    ("checkpoint_diff", {"task_id": "ghost", "from_version": 1, "to_version": 2}, "no task 'ghost'"),
    ("verify_checkpoint", {"task_id": "proc"}, "send exactly one of: task_id + from_version + to_version"),
    ("verify_checkpoint", {"before": {"goal": "g"}}, "send exactly one of: task_id + from_version + to_version"),
    ("verify_checkpoint", {"before": {"goal": "g"}, "after": {"goal": ""}}, "after.goal: must not be empty"),
    ("verify_checkpoint", {"state": {"goal": "g"}}, "send exactly one of"),
    ("verify_checkpoint", {"state": {"goal": "g"}, "summary": "s", "before": {"goal": "g"}}, "send exactly one of"),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"), BAD_CALLS, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(BAD_CALLS)]
)
async def test_bad_input_gets_a_clear_error_and_changes_nothing(
    client: Client, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    await client.call_tool("checkpoint_save", {"task_id": "proc", "state": procurement_state()})
    before = (await client.call_tool("checkpoint_load", {"format": "json", "task_id": "proc"})).structured_content

    result = await client.call_tool(tool, arguments)

    assert result.is_error
    text = tool_text(result)
    assert expected in text, text
    assert "Traceback" not in text and "errors.pydantic.dev" not in text
    after = await client.call_tool("checkpoint_load", {"format": "json", "task_id": "proc"})
    assert after.structured_content == before  # still serving, nothing stored changed


async def test_a_lone_surrogate_is_refused(client: Client) -> None:
    result = await client.call_tool("checkpoint_save", {"task_id": "proc", "state": {"goal": "bad \ud800 text"}})
    assert result.is_error and "state.goal: Input should be a valid string" in tool_text(result)


async def test_rejected_values_are_not_echoed_back(client: Client) -> None:
    secret = "sk-this-value-must-not-come-back"
    result = await client.call_tool(
        "checkpoint_save", {"task_id": "proc", "state": {"goal": secret, "pending": secret}}
    )
    assert result.is_error and secret not in tool_text(result)


async def test_unknown_resource_task_is_a_not_found_error(client: Client) -> None:
    with pytest.raises(Exception, match="no task 'ghost'"):
        await client.read_resource("ctxkeep://tasks/ghost")


async def test_huge_version_numbers_are_a_clear_error(client: Client) -> None:
    for tool, arguments in (
        ("checkpoint_load", {"task_id": "proc", "version": 2**63}),
        ("checkpoint_diff", {"task_id": "proc", "from_version": 1, "to_version": 2**63}),
        ("verify_checkpoint", {"task_id": "proc", "from_version": 1, "to_version": 2**63}),
    ):
        result = await client.call_tool(tool, arguments)
        assert result.is_error and "less than or equal to 9007199254740992" in tool_text(result), tool_text(result)


async def test_a_text_over_the_limit_is_told_where_the_long_text_goes(client: Client) -> None:
    """A decision (or any state text) over 4,000 characters: the message says to put the text in evidence and keep a
    short decision with the ref evidence_put returns; nothing is stored."""
    for field, state in (
        ("state.decisions.0: ", {"goal": "g", "decisions": ["Chose supplier B because " + "x" * 4_500]}),
        ("state.goal: ", {"goal": "y" * 4_001}),
        ("state.constraints.1: ", {"goal": "g", "constraints": ["short", "z" * 5_000]}),
    ):
        refused = await client.call_tool("checkpoint_save", {"task_id": "long", "state": state})
        assert refused.is_error
        message = tool_text(refused)
        line = next(line for line in message.splitlines() if line.startswith("- " + field))
        assert "4,000" in line and "evidence_put" in line and "ref" in line, message
        assert "x" * 50 not in message and "y" * 50 not in message  # the text itself is not echoed
    decision_line = next(line for line in message.splitlines() if "constraints.1" in line)
    assert "short constraint" in decision_line, decision_line
    listed = await client.call_tool("checkpoint_list", {})
    assert listed.structured_content["tasks"] == []
