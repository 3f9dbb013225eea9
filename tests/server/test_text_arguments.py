"""Text arguments stay text: a tool output that happens to be JSON ('{"a": 1}', '[1, 2]', 'null', 'true') is stored
and read back byte for byte, not parsed into an object and refused. The MCP SDK parses a string argument as JSON
whenever its field is not exactly `str`, which every optional text field (`str | None`) is."""

from __future__ import annotations

import pytest
from mcp import Client

from tests.conftest import procurement_state, tool_text

pytestmark = pytest.mark.anyio

JSON_LOOKING = ['{"a": "b"}', "[1, 2, 3]", "null", "true", '{\n  "status": "ok",\n  "rows": []\n}']


@pytest.mark.parametrize("content", JSON_LOOKING)
async def test_json_looking_tool_output_is_stored_and_read_back_exactly(client: Client, content: str) -> None:
    put = await client.call_tool("evidence_put", {"content": content, "title": '{"t": 1}', "source": "[tool]"})
    assert not put.is_error, tool_text(put)
    ref = put.structured_content["ref"]
    got = await client.call_tool("evidence_get", {"ref": ref, "format": "json"})
    assert not got.is_error, tool_text(got)
    assert got.structured_content["content"] == content


async def test_json_looking_text_in_other_tools_is_kept(client: Client) -> None:
    saved = await client.call_tool("checkpoint_save", {"task_id": "pay", "state": procurement_state()})
    assert not saved.is_error, tool_text(saved)
    intent = await client.call_tool(
        "action_intent",
        {
            "task_id": "pay",
            "action": "pay",
            "target": "invoice 7",
            "idempotency_key": "inv-7",
            "params_summary": '{"amount": 100, "currency": "EUR"}',
        },
    )
    assert not intent.is_error, tool_text(intent)
    assert intent.structured_content["entry"]["params_summary"] == '{"amount": 100, "currency": "EUR"}'


async def test_a_list_sent_as_a_json_string_is_still_parsed(client: Client) -> None:
    """What the SDK's parsing is for (clients that send a list as its JSON text) keeps working on non-text fields."""
    put = await client.call_tool("evidence_put", {"content": "tagged", "tags": '["alpha", "beta"]'})
    assert not put.is_error, tool_text(put)
