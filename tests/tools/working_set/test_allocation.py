"""Budget allocation of the working set: what must stay while the budget has room, shares only when it is short,
and why each thing left (issue 17)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from tests.procurement import INTENT, POLICY, SUPPLIER_MAIL, V2
from ctxkeep.server import build_server
from ctxkeep.settings import Settings
from tests.conftest import PROJECT, procurement_state, tool_text

pytestmark = pytest.mark.anyio


async def _demo_working_set(db_path: Path, budget: int = 1_500) -> dict[str, Any]:
    """The demo's records (mail as evidence, v2 citing it, the policy memory, the open intent) and its working set."""
    async with Client(build_server(Settings(db_path=db_path, project=PROJECT))) as client:
        mail = await client.call_tool(
            "evidence_put",
            {
                "content": SUPPLIER_MAIL,
                "kind": "document",
                "source": "mail",
                "title": "Supplier C quote v2",
                "task_id": "procurement",
            },
        )
        ref = mail.structured_content["ref"]
        state = {**V2, "facts": [{**V2["facts"][0], "source_ref": ref}], "evidence_refs": [ref]}
        saved = await client.call_tool(
            "checkpoint_save", {"task_id": "procurement", "state": state, "trigger": "semantic"}
        )
        assert not saved.is_error
        assert not (await client.call_tool("memory_write", POLICY)).is_error
        assert not (await client.call_tool("action_intent", INTENT)).is_error
        built = await client.call_tool(
            "build_working_set",
            {
                "task_id": "procurement",
                "budget_tokens": budget,
                "format": "json",
                "focus": "Supplier C freight per piece",
            },
        )
        assert not built.is_error
        return dict(built.structured_content)


async def test_the_demos_1500_token_working_set_keeps_the_freight_fact_and_the_open_approval(tmp_path: Path) -> None:
    # refs are random per database, and their token counts moved the state slot over its share: try several
    for n in range(12):
        result = await _demo_working_set(tmp_path / f"demo-{n}.db")
        text = result["text"]
        assert "Supplier C freight = 0.48 USD/piece" in text, (n, result["dropped"])
        assert "[pending] PO-7731: issue purchase order" in text
        assert INTENT["idempotency_key"] in text
        assert result["tokens_total"] <= 1_500
        assert not [d for d in result["dropped"] if d["slot"] == "state"], result["dropped"]


BIG_STATE = procurement_state(
    decisions=[f"Decision {n}: normalize quote {n} to USD/piece including freight and duty" for n in range(40)],
    facts=[{"key": f"Supplier {n} freight", "value": round(0.3 + n / 100, 2), "unit": "USD/piece"} for n in range(12)],
)


async def _build(client: Client, **arguments: Any) -> Any:
    return await client.call_tool("build_working_set", {"task_id": "proc", "format": "json", **arguments})


async def test_a_state_larger_than_its_share_is_shown_whole_while_the_budget_has_room(db_path: Path) -> None:
    async with Client(build_server(Settings(db_path=db_path, project=PROJECT))) as client:
        await client.call_tool("checkpoint_save", {"task_id": "proc", "state": BIG_STATE})
        result = (await _build(client, budget_tokens=3_000)).structured_content
    state = next(b for b in result["blocks"] if b["slot"] == "state")
    assert state["tokens"] > 0.13 * 3_000  # over its default share, and still whole: nothing else needed the room
    assert not result["dropped"] and "Decision 39" in result["text"]


async def test_a_short_budget_keeps_control_rules_and_facts_and_says_why_the_rest_left(db_path: Path) -> None:
    async with Client(build_server(Settings(db_path=db_path, project=PROJECT))) as client:
        await client.call_tool("checkpoint_save", {"task_id": "proc", "state": BIG_STATE})
        result = (await _build(client, budget_tokens=700)).structured_content
    text = result["text"]
    assert (
        all(f"Supplier {n} freight = " in text for n in range(12))
        and "[pending] PO-1" in text
        and "Supplier C freight missing" in text
    )
    assert result["tokens_total"] <= 700 and result["dropped"]
    assert all(
        d["why"].startswith(("left out: the state slot had", "cut short: the state slot had"))
        for d in result["dropped"]
    )
    assert all("checkpoint_load shows the whole state" in d["why"] for d in result["dropped"])


async def test_a_budget_below_the_control_rules_gets_one_error_naming_a_budget_that_works(db_path: Path) -> None:
    rules = procurement_state(
        constraints=[f"Rule {n}: never contact supplier {n} directly, only through the buyer" for n in range(30)]
    )
    async with Client(build_server(Settings(db_path=db_path, project=PROJECT))) as client:
        await client.call_tool("checkpoint_save", {"task_id": "proc", "state": rules})
        refused = await _build(client, budget_tokens=300)
        assert refused.is_error
        message = tool_text(refused)
        assert (
            message.startswith("budget_tokens = 300 is too small for this task's control rules")
            and "Traceback" not in message
        )
        enough = int(message.split("send budget_tokens of at least ")[1].split()[0].rstrip(","))
        built = await _build(client, budget_tokens=enough)
    assert not built.is_error, tool_text(built)
    assert "Rule 29" in built.structured_content["text"]


async def test_conflicting_slot_caps_get_one_error_each_that_says_what_to_send(db_path: Path) -> None:
    async with Client(build_server(Settings(db_path=db_path, project=PROJECT))) as client:
        await client.call_tool("checkpoint_save", {"task_id": "proc", "state": procurement_state()})
        over = await _build(client, budget_tokens=1_000, slot_budgets={"evidence": 700, "history": 500})
        small = await _build(client, budget_tokens=1_000, slot_budgets={"goal": 5})
        fixed = await _build(
            client, budget_tokens=1_000, slot_budgets={"goal": int(tool_text(small).split("at least ")[1].split()[0])}
        )
    assert over.is_error and "slot_budgets add up to 1200 tokens, more than budget_tokens (1000)" in tool_text(over)
    assert "raise budget_tokens or lower the slot caps" in tool_text(over)
    assert (
        small.is_error
        and "slot_budgets['goal'] = 5 tokens cannot hold the goal, done criteria and constraints" in tool_text(small)
    )
    assert not fixed.is_error, tool_text(fixed)


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("checkpoint_load", {"task_id": "proc", "format": "xml"}, "format: Input should be 'text' or 'json'"),
        ("evidence_search", {"query": "freight", "format": "markdown"}, "format: Input should be 'text' or 'json'"),
        (
            "build_working_set",
            {"task_id": "proc", "format": "text"},
            "format: Input should be 'markdown', 'json', 'anthropic' or 'openai'",
        ),
    ],
)
async def test_an_unknown_format_gets_one_error_listing_the_formats(
    db_path: Path, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with Client(build_server(Settings(db_path=db_path, project=PROJECT))) as client:
        await client.call_tool("checkpoint_save", {"task_id": "proc", "state": procurement_state()})
        result = await client.call_tool(tool, arguments)
    assert result.is_error and expected in tool_text(result) and tool_text(result).count("\n- ") == 1
