"""The real Claude Code, Codex and Gemini CLIs start `ctxkeep serve`, see its tools, and call them.

Each CLI runs headless against a loopback mock of its model API (tests/e2e/mock_*.py) whose scripted
model calls checkpoint_save, then checkpoint_load; the mock records what the CLI sent the model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from ctxkeep.storage import open_store
from ctxkeep.tools import checkpoint
from ctxkeep.tools.scope import Scope
from tests.conftest import procurement_state
from tests.e2e.clients import claude_code, codex, gemini
from tests.e2e.mock_api import call, text

pytestmark = pytest.mark.slow
CLIENTS = pytest.mark.parametrize("start", [claude_code, codex, gemini], ids=["claude_code", "codex", "gemini"])
FIXED = {
    "checkpoint_save",
    "checkpoint_load",
    "evidence_put",
    "evidence_get",
    "compress_history",
    "verify_checkpoint",
    "build_working_set",
}


async def _stored(db: Path, project: str, task_id: str) -> Any:
    store = await open_store(db)
    try:
        return await checkpoint.checkpoint_load(Scope(store=store, project=project), task_id)
    finally:
        await store.close()


@CLIENTS
def test_the_cli_starts_ctxkeep_lists_its_tools_and_a_scripted_save_then_load_go_through(
    tmp_path: Path, start: Callable[..., Any]
) -> None:
    script = [
        call("checkpoint_save", {"task_id": "proc", "state": procurement_state()}),
        call("checkpoint_load", {"task_id": "proc"}),
        text("resumed"),
    ]
    with start(tmp_path, script) as cli:
        done = cli.run("Save the procurement task, then load it back.")
        assert done.returncode == 0, done.stderr[-3000:]
        first, *_, last = cli.requests()
        assert set(cli.tools(first.body)) >= FIXED, "ctxkeep's tools are in the very first request"
        saved, loaded = cli.tool_results(last.body)

    assert "refused" not in saved and "proc" in saved
    assert "Compare 20 supplier quotes" in loaded and "PO-1" in loaded
    stored = anyio.run(_stored, cli.db, str(cli.proj), "proc")
    assert stored.version == 1 and stored.state.pending == ["Supplier C freight missing"]
