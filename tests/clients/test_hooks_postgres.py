"""The hooks with CTXKEEP_DB=postgresql://… (issue 19): the per-event hooks run on the standard library, which cannot
reach PostgreSQL, so they write a local SQLite spool in the data folder (records, hook state, offloads); the MCP
server takes the offloads into the shared store when the model asks for them, and the pre-compact worker binds the
session in the shared store and copies back what session-start reads (the binding, the task's latest state)."""

from __future__ import annotations

import json
import sqlite3
import stat
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import asyncpg
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ctxkeep.project import spool_path
from tests.claude_home import Claude, bash, tool_result, tool_use, user
from tests.db_dump import query
from tests.pg import fresh_schema

pytestmark = pytest.mark.slow
BIG = (
    "\n".join(f"line {n}: linking module_{n}.o ... ok" for n in range(3_000)) + "\nERROR: module_2999 failed to link\n"
)


class SharedClaude(Claude):
    """The fake Claude Code home, its database a PostgreSQL schema; the data folder (spool, hook log) in the temp dir."""

    def __init__(self, tmp: Path, url: str) -> None:
        super().__init__(tmp)
        self.url, self.data = url, tmp / "xdg"
        self.db = spool_path(url, self.data / "ctxkeep")  # what the hooks open (Claude.rows reads it)
        self.log = self.db.parent / "ctxkeep-hooks.log"

    def env(self, **extra: str) -> dict[str, str]:
        return {**super().env(), "CTXKEEP_DB": self.url, "XDG_DATA_HOME": str(self.data), **extra}

    def shared(self, sql: str) -> list[tuple[Any, ...]]:
        return query(self.url, sql)


@pytest.fixture
def claude(tmp_path: Path) -> Iterator[SharedClaude]:
    with fresh_schema() as url:
        yield SharedClaude(tmp_path, url)


def _view(out: dict[str, Any] | None) -> str:
    assert out is not None
    return str(out["hookSpecificOutput"]["updatedToolOutput"]["stdout"])


async def _server_get(claude: SharedClaude, ref: str) -> str:
    env = {**claude.env(), "CTXKEEP_PROJECT": str(claude.project.resolve())}
    params = StdioServerParameters(command=sys.executable, args=["-m", "ctxkeep", "serve"], env=env)
    with anyio.fail_after(60):
        async with Client(params) as client:
            got = await client.call_tool("evidence_get", {"ref": ref, "mode": "grep", "pattern": "module_2999 failed"})
            assert not got.is_error, got
            return "\n".join(block.text for block in got.content if hasattr(block, "text"))


def test_the_hooks_offload_into_a_private_local_spool_and_the_mcp_server_serves_the_ref_from_the_shared_store(
    claude: SharedClaude,
) -> None:
    view = _view(claude.post_tool_use(*bash("make", BIG)))
    assert claude.db.exists() and stat.S_IMODE(claude.db.stat().st_mode) == 0o600
    [(ref, data)] = claude.rows("SELECT ref, data FROM evidence_inbox")
    assert zlib.decompress(data).decode() == BIG and ref in view
    assert claude.shared("SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()") == [
        (0,)
    ]  # hooks never reach it
    text = anyio.run(_server_get, claude, ref)
    assert "ERROR: module_2999 failed to link" in text
    assert [row[0] for row in claude.shared("SELECT ref FROM evidence")] == [ref]  # taken in under the ref shown
    assert claude.rows("SELECT count(*) FROM evidence_inbox") == [(0,)]
    assert "post-tool-use ok" in claude.logged()  # the log lives beside the spool, in the data folder


def test_the_worker_binds_in_the_shared_store_and_session_start_reads_the_task_from_the_spool(
    claude: SharedClaude,
) -> None:
    state = {
        "goal": "Get mix phx.server to start on port 4001",
        "constraints": ["Do not touch the production config"],
        "pending": ["Find what holds port 4000"],
    }
    claude.append(user("start the phoenix server on 4001"))
    claude.save_task("phx-start", state)  # saved by the agent, in the shared store
    claude.append(
        tool_use("mcp__ctxkeep__checkpoint_save", {"task_id": "phx-start", "state": state}, "toolu_save1"),
        tool_result("toolu_save1", "saved phx-start v1"),
    )
    assert claude.pre_compact().returncode == 0
    assert claude.shared("SELECT task_id, bound FROM sessions") == [("phx-start", 1)]
    assert claude.rows("SELECT task_id, bound FROM sessions") == [("phx-start", 1)]  # copied back for the hooks
    assert [row[0] for row in claude.rows("SELECT task_id FROM checkpoints")] == ["phx-start"]
    context = claude.session_start("resume")
    for text in ("Task phx-start", state["goal"], "Do not touch the production config", "Find what holds port 4000"):
        assert text in context
    assert "spool:" in claude.logged()


def test_a_summary_post_compact_kept_reaches_the_shared_store_at_the_next_worker_run(claude: SharedClaude) -> None:
    claude.append(user("never run the migrations against the staging database"))
    assert claude.pre_compact().returncode == 0
    summary = "We are fixing the port check. Never run the migrations against the staging database."
    done = claude.hook("post-compact", claude.base("PostCompact", compact_summary=f"<summary>{summary}</summary>"))
    assert done.returncode == 0
    [(kept,)] = claude.rows("SELECT summary FROM task_digests")
    assert kept.endswith(summary)
    claude.append(user("and then deploy to the test cluster", at="2026-11-30T09:30:00Z"))
    assert claude.pre_compact().returncode == 0
    assert claude.shared("SELECT summary FROM task_digests") == [(kept,)]


def test_no_directory_is_made_from_the_url(claude: SharedClaude, tmp_path: Path) -> None:
    claude.prompt("never deploy on fridays")
    assert not any(part.startswith("postgresql:") for path in Path.cwd().iterdir() for part in path.parts)
    with sqlite3.connect(claude.db) as conn:
        assert json.loads(json.dumps(conn.execute("SELECT count(*) FROM session_records").fetchone()))[0] >= 1


async def _taken_in_without_asking(claude: SharedClaude, ref: str) -> tuple[float, float]:
    """Start a server with an offload waiting; how long until it is in the shared store (no evidence call), then how
    long a second offload takes once any tool (checkpoint_list) is called."""
    env = {**claude.env(), "CTXKEEP_PROJECT": str(claude.project.resolve())}
    params = StdioServerParameters(command=sys.executable, args=["-m", "ctxkeep", "serve"], env=env)

    def refs() -> list[tuple[str]]:
        try:
            return claude.shared("SELECT ref FROM evidence")
        except asyncpg.UndefinedTableError:  # the server makes its tables when it opens the database, soon after start
            return []

    async def stored(wanted: str) -> float:
        started = anyio.current_time()
        while (wanted,) not in refs():
            assert anyio.current_time() - started < 10, f"{wanted} was not taken in"
            await anyio.sleep(0.1)
        return anyio.current_time() - started

    with anyio.fail_after(60):
        async with Client(params) as client:
            after_start = await stored(ref)
            second = BIG.replace("module_2999", "module_3000")
            view = _view(claude.post_tool_use(*bash("make again", second)))
            [(ref2,)] = claude.rows("SELECT ref FROM evidence_inbox")
            assert ref2 in view
            assert not (await client.call_tool("checkpoint_list", {})).is_error
            after_call = await stored(ref2)
    return after_start, after_call


def test_the_hooks_offloads_are_taken_in_after_the_server_starts_and_after_any_call(claude: SharedClaude) -> None:
    claude.post_tool_use(*bash("make", BIG))
    [(ref,)] = claude.rows("SELECT ref FROM evidence_inbox")
    after_start, after_call = anyio.run(_taken_in_without_asking, claude, ref)
    assert after_start < 10 and after_call < 10
    assert claude.rows("SELECT count(*) FROM evidence_inbox") == [(0,)]
