"""`ctxkeep serve` answers the handshake before it imports what the tools run (issue 27).

`initialize` and the four lists (tools, resources, resource templates, prompts) need only the SDK, the settings and
ctxkeep.server.advertised; the tool functions, the models, the storage and the tokenizer are imported at the first
call, which also opens the database. Seen from outside: the server runs with an import finder that names on stderr
each module as it is first imported (the way `python -m ctxkeep serve` runs it otherwise), and the database file
does not exist until the first call.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from ctxkeep.server import build_server
from ctxkeep.server.advertised import advertised
from ctxkeep.settings import Settings
from tests.conftest import procurement_state
from tests.raw_stdio import INITIALIZE

pytestmark = pytest.mark.anyio

# `python -m ctxkeep serve`, with every first import of a module named on stderr (importlib.import_module included,
# which `python -X importtime` and the "import" audit event do not see)
WATCHED = """
import runpy, sys

class Named:
    def find_spec(self, name, path=None, target=None):
        sys.stderr.write("imported " + name + "\\n")
        sys.stderr.flush()
        return None

sys.meta_path.insert(0, Named())
sys.argv = ["ctxkeep", "serve"]
runpy.run_module("ctxkeep", run_name="__main__", alter_sys=True)
"""
# what the first call loads; none of it before
HEAVY = (
    "ctxkeep.server.app",
    "ctxkeep.tools",
    "ctxkeep.models.checkpoint",
    "ctxkeep.storage.interface",
    "ctxkeep.storage.sqlite",
    "aiosqlite",
    "tiktoken",
)


class ImportWatchedServer:
    """`ctxkeep serve` run by WATCHED, its stderr (the modules, as they are imported) in a file."""

    def __init__(self, db_path: Path, stderr: Path) -> None:
        self.stderr_path = stderr
        self._stderr = stderr.open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", WATCHED],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            env={**os.environ, "CTXKEEP_DB": str(db_path), "CTXKEEP_PROJECT": "/startup"},
        )

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def answer(self, request_id: Any) -> dict[str, Any]:
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, "the server closed its output"
            message = dict(json.loads(line))
            if message.get("id") == request_id:
                return message

    def request(self, request_id: int, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.send({"jsonrpc": "2.0", "id": request_id, "method": method, **({"params": params} if params else {})})
        return self.answer(request_id)

    def imported(self) -> set[str]:
        """The modules imported so far."""
        lines = self.stderr_path.read_text(errors="replace").splitlines()
        return {line.removeprefix("imported ") for line in lines if line.startswith("imported ")}

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        code = self.proc.wait(timeout=60)
        self._stderr.close()
        return code


def _heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))


def test_the_handshake_and_the_lists_import_none_of_the_tools_and_open_no_database(tmp_path: Path) -> None:
    db = tmp_path / "fresh.db"
    server = ImportWatchedServer(db, tmp_path / "imports.txt")
    try:
        init = server.request(0, INITIALIZE["method"], INITIALIZE["params"])["result"]
        assert set(init["capabilities"]) >= {"tools", "resources", "prompts", "completions"}
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        for request_id, method in enumerate(
            ["tools/list", "resources/list", "resources/templates/list", "prompts/list", "ping"], start=1
        ):
            assert "result" in server.request(request_id, method)
        before = server.imported()
        assert "ctxkeep.server.advertised" in before  # the observation works: the server's imports are in the file
        assert _heavy(before) == []
        assert not db.exists()

        listed = server.request(10, "tools/call", {"name": "checkpoint_list", "arguments": {}})["result"]
        assert not listed.get("isError"), listed
        after = server.imported()
        assert {"ctxkeep.server.app", "ctxkeep.models.checkpoint", "aiosqlite"} <= set(_heavy(after))
        assert db.exists()
    finally:
        assert server.close() == 0  # stdin closed: the store it opened is closed and the process exits cleanly


def test_calls_that_arrive_while_the_tools_load_are_each_answered_once(tmp_path: Path) -> None:
    server = ImportWatchedServer(tmp_path / "s.db", tmp_path / "imports.txt")
    try:
        server.request(0, INITIALIZE["method"], INITIALIZE["params"])
        server.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        calls = {
            1: ("checkpoint_save", {"task_id": "proc", "state": procurement_state()}),
            2: ("evidence_put", {"content": "supplier C freight quote: 1,200 EUR", "title": "quote"}),
            3: ("checkpoint_list", {}),
            4: ("no_such_tool", {}),
        }
        assert server.proc.stdin is not None
        server.proc.stdin.write(  # one write: every call is in before the first finished loading
            b"".join(
                json.dumps(
                    {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": n, "arguments": a}}
                ).encode()
                + b"\n"
                for i, (n, a) in calls.items()
            )
            + json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"}).encode()
            + b"\n"
        )
        server.proc.stdin.flush()
        answers: dict[int, dict[str, Any]] = {}
        assert server.proc.stdout is not None
        while len(answers) < 5:
            message = json.loads(server.proc.stdout.readline())
            assert message["id"] not in answers, f"request {message['id']} answered twice"
            answers[message["id"]] = message
        assert answers[1]["result"]["structuredContent"]["version"] == 1
        assert answers[2]["result"]["structuredContent"]["ref"].startswith("ev_")
        assert not answers[3]["result"].get("isError")
        assert answers[4]["result"]["isError"] and "no_such_tool" in answers[4]["result"]["content"][0]["text"]
        assert answers[5]["result"] == {}
        again = server.request(6, "tools/call", {"name": "checkpoint_list", "arguments": {}})["result"]
        assert [t["task_id"] for t in again["structuredContent"]["tasks"]] == ["proc"]
    finally:
        assert server.close() == 0


def test_a_server_stopped_before_any_call_exits_cleanly_and_creates_nothing(tmp_path: Path) -> None:
    db = tmp_path / "never.db"
    server = ImportWatchedServer(db, tmp_path / "imports.txt")
    server.request(0, INITIALIZE["method"], INITIALIZE["params"])
    assert server.close() == 0
    assert not db.exists()


async def test_a_resource_read_a_prompt_or_a_completion_as_the_first_call_loads_the_tools(db_path: Path) -> None:
    settings = Settings(db_path=db_path, project="/startup")
    with anyio.fail_after(60):
        async with Client(build_server(settings)) as client:
            page = await client.read_resource("ctxkeep://tasks")
            assert json.loads(page.contents[0].text)["tasks"] == []  # type: ignore[union-attr]
        async with Client(build_server(settings)) as client:
            with pytest.raises(Exception, match="no task|checkpoint_save"):
                await client.get_prompt("resume", {})
        async with Client(build_server(settings)) as client:
            await client.call_tool("checkpoint_save", {"task_id": "proc", "state": procurement_state()})
        async with Client(build_server(settings)) as client:
            completed = await client.complete(
                {"type": "ref/prompt", "name": "resume"},  # type: ignore[arg-type]
                {"name": "task_id", "value": "pr"},
            )
            assert completed.completion.values == ["proc"]


async def test_the_lists_before_and_after_the_first_call_are_the_advertised_ones(db_path: Path) -> None:
    lists = advertised()
    with anyio.fail_after(60):
        async with Client(build_server(Settings(db_path=db_path, project="/startup"))) as client:
            before = (await client.list_tools()).tools
            assert not (await client.call_tool("checkpoint_list", {})).is_error
            after = (await client.list_tools()).tools
            prompts = (await client.list_prompts()).prompts
    assert before == after == lists.tools and prompts == lists.prompts


def test_serve_without_flags_reports_bad_settings_as_every_command_does(tmp_path: Path) -> None:
    env = {**os.environ, "CTXKEEP_DB": str(tmp_path / "s.db"), "CTXKEEP_MAX_EVIDENCE_BYTES": "lots"}
    served, listed = (
        subprocess.run([sys.executable, "-m", "ctxkeep", *args], input=b"", capture_output=True, env=env, timeout=60)
        for args in (["serve"], ["tasks"])
    )
    assert served.returncode == listed.returncode != 0
    assert served.stderr == listed.stderr and served.stderr.decode().startswith("ctxkeep: CTXKEEP_MAX_EVIDENCE_BYTES")
    assert served.stdout == b""
