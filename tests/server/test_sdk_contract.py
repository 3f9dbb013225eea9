"""What the server takes from the MCP SDK beyond its public API, asserted as used, so an SDK update that changes any
of it fails here first (pyproject pins the minor version these tests pass on).

The private parts: `MCPServer._tool_manager.get_tool(name)` and its `Tool.parameters` / `Tool.fn_metadata`
(`server/mcp_server.py`: unknown arguments refused by name, text arguments kept as text), `FuncMetadata.pre_parse_json`
and `.arg_model` (`server/text_arguments.py`), `MCPServer._lowlevel_server` with its `middleware` list, `run` and
`create_initialization_options` (`server/handshake.py`, `server/stdio_limit.py`)."""

from __future__ import annotations

import importlib.metadata
import inspect
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata

from ctxkeep.server import build_server
from ctxkeep.server.handshake import NotInitialized, guard_handshake
from ctxkeep.server.text_arguments import TextKeepingMetadata
from ctxkeep.settings import Settings
from tests.conftest import tool_text
from tests.paths import TESTS

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = TESTS.parent


def _server(tmp_path: Path) -> MCPServer[Any]:
    """The server with its tools registered, as its first tool call registers them."""
    server = build_server(Settings(db_path=tmp_path / "ctxkeep.db", project="/p"))
    server.load_tools()
    return server


def test_the_installed_sdk_is_the_minor_version_pinned() -> None:
    pins = [
        r
        for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
        if r.startswith("mcp")
    ]
    found = re.fullmatch(r"mcp>=(\d+)\.(\d+)(?:\.\d+)?,<(\d+)\.(\d+)", pins[0])
    assert found, pins  # a floor and the next minor version as the ceiling
    major, minor, top_major, top_minor = map(int, found.groups())
    assert (top_major, top_minor) == (major, minor + 1)
    assert tuple(map(int, importlib.metadata.version("mcp").split(".")[:2])) == (major, minor)


def test_the_tool_manager_gives_each_tool_its_schema_and_metadata(tmp_path: Path) -> None:
    server = _server(tmp_path)
    tool = server._tool_manager.get_tool("checkpoint_load")
    assert tool is not None and server._tool_manager.get_tool("no_such_tool") is None
    assert "task_id" in tool.parameters["properties"]  # what call_tool compares the arguments with
    assert isinstance(tool.fn_metadata, TextKeepingMetadata)  # the replacement add_tool made is the one in use
    assert isinstance(tool.fn_metadata, FuncMetadata) and "task_id" in tool.fn_metadata.arg_model.model_fields
    assert callable(FuncMetadata.pre_parse_json) and list(
        inspect.signature(FuncMetadata.pre_parse_json).parameters
    ) == [
        "self",
        "data",
    ]


@pytest.mark.anyio
async def test_the_metadata_the_server_replaced_is_the_one_that_parses_each_call(tmp_path: Path) -> None:
    async with Client(_server(tmp_path)) as client:
        put = await client.call_tool("evidence_put", {"content": '{"a": 1}', "title": "null"})
        assert not put.is_error, tool_text(put)
        got = await client.call_tool("evidence_get", {"ref": put.structured_content["ref"], "format": "json"})
        assert got.structured_content["content"] == '{"a": 1}'  # the SDK would have parsed it into an object
        typo = await client.call_tool("checkpoint_load", {"task_id": "t", "verison": 2})
        assert typo.is_error and "verison: unknown field" in tool_text(typo)


def test_the_lowlevel_server_takes_middleware_and_runs_on_streams(tmp_path: Path) -> None:
    server = _server(tmp_path)
    lowlevel = server._lowlevel_server
    assert isinstance(lowlevel.middleware, list)
    guard_handshake(server)
    guard_handshake(server)
    assert sum(isinstance(m, NotInitialized) for m in lowlevel.middleware) == 1
    assert list(inspect.signature(lowlevel.run).parameters)[:3] == [
        "read_stream",
        "write_stream",
        "initialization_options",
    ]
    options = lowlevel.create_initialization_options()
    assert options.server_name == "ctxkeep" and options.server_version
