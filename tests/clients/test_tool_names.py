"""One list of ctxkeep's tool names (`ctxkeep.tool_names`, standard library only) that every client's hooks use to
tell ctxkeep's own tools from another server's: it must be the server's real `tools/list`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from ctxkeep.server import build_server
from ctxkeep.settings import Settings
from ctxkeep.tool_names import SERVER_NAME, TOOL_NAMES

pytestmark = pytest.mark.anyio


async def test_the_list_is_the_servers_tools_list(tmp_path: Path) -> None:
    async with Client(build_server(Settings(db_path=tmp_path / "ctxkeep.db", project="/p"))) as client:
        served = {tool.name for tool in (await client.list_tools()).tools}
    assert set(TOOL_NAMES) == served
    assert len(TOOL_NAMES) == len(served) == 16


def test_the_server_name_is_the_one_every_install_registers() -> None:
    from ctxkeep.clients.claude_code import install as claude
    from ctxkeep.clients.core import install_files

    assert SERVER_NAME == claude.SERVER_NAME == install_files.SERVER_NAME == "ctxkeep"


def test_the_list_costs_a_hook_nothing_but_the_standard_library() -> None:
    probe = "import sys\nimport ctxkeep.tool_names\nprint(sorted(m for m in ('typing', 'pydantic', 'mcp') if m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr
