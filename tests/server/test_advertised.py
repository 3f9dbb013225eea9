"""advertised.json is what the registered tools, resources and prompts list, byte for byte (issue 27).

`ctxkeep serve` answers tools/list and the other lists from that file, before it imports the tool functions; so a
changed description, argument or annotation must be written into it (`python -m ctxkeep.server.write_advertised`),
or what the model sees would not be what the server validates.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxkeep.server.advertised import PATH, advertised
from ctxkeep.server.write_advertised import registered
from tests.raw_stdio import RawServer

pytestmark = pytest.mark.anyio


async def test_the_file_is_what_the_registered_definitions_list() -> None:
    live = (await registered()).text()
    assert PATH.read_text(encoding="utf-8") == live, "run `python -m ctxkeep.server.write_advertised`"


async def test_the_file_names_every_registered_tool_with_its_lean_schema() -> None:
    live = await registered()
    assert [tool.name for tool in advertised().tools] == [tool.name for tool in live.tools]
    save = next(tool for tool in advertised().tools if tool.name == "checkpoint_save")
    assert "title" not in json.dumps(save.input_schema) and save.output_schema  # lean input, full output
    assert {p.name for p in advertised().prompts} == {"resume", "handoff", "compress"}


def test_stdio_sends_the_lists_as_the_file_holds_them(db_path: Path) -> None:
    wire = json.loads(PATH.read_text(encoding="utf-8"))
    server = RawServer(db_path)
    try:
        for request_id, (method, key, field) in enumerate(
            [
                ("tools/list", "tools", "tools"),
                ("resources/list", "resources", "resources"),
                ("resources/templates/list", "resource_templates", "resourceTemplates"),
                ("prompts/list", "prompts", "prompts"),
            ],
            start=1,
        ):
            server.send({"jsonrpc": "2.0", "id": request_id, "method": method})
            assert server.answer(request_id)["result"][field] == wire[key], method
    finally:
        server.proc.kill()
        server.proc.wait()
