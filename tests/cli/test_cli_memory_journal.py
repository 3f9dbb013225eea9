"""`ctxkeep memory list|show|forget` and `ctxkeep journal [--open]` on what agents stored: text for
people, JSON that parses, forget asking on a terminal (and needing --yes without one), errors naming commands."""

from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.journal import ActionIntentRequest
from ctxkeep.models.memory import MemoryWriteRequest
from ctxkeep.storage import open_store
from ctxkeep.tools.checkpoint import checkpoint_save
from ctxkeep.tools.journal import action_intent
from ctxkeep.tools.memory import memory_write
from ctxkeep.tools.scope import Scope
from tests.conftest import procurement_state
from tests.procurement import store_procurement
from tests.paths import TESTS

ROOT = TESTS.parent
pytestmark = pytest.mark.slow


def ctxkeep(*args: str, env: dict[str, str], stdin: str | None = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeep", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **env},
        timeout=120,
        cwd=ROOT,
        input=stdin,
    )


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The procurement task as an agent stores it (tests/procurement.py), plus a user preference (written twice: two versions), a second task and an
    open intent, written through the tools as an agent's calls would."""
    tmp = tmp_path_factory.mktemp("memjournal")
    (tmp / "project").mkdir()
    env = {"CTXKEEP_DB": str(tmp / "demo.db"), "CTXKEEP_PROJECT": str(tmp / "project")}
    store_procurement(env)

    async def write() -> None:
        store = await open_store(Path(env["CTXKEEP_DB"]))
        scope = Scope(store=store, project=env["CTXKEEP_PROJECT"])
        try:
            for content in ("Answer in German", "Answer in English, briefly"):
                await memory_write(
                    scope,
                    MemoryWriteRequest(
                        kind="user_preference",
                        key="reply language",
                        content=content,
                        explicit_confirmation=True,
                        source_message_id="msg-17",
                    ),
                )
            await checkpoint_save(
                scope, CheckpointSaveRequest(task_id="refunds", state=TaskState.model_validate(procurement_state()))
            )
            await action_intent(
                scope,
                ActionIntentRequest(
                    task_id="refunds",
                    idempotency_key="refunds:8812:refund",
                    action="send refund",
                    target="order 8812",
                    params_summary="42 EUR",
                ),
            )
        finally:
            await store.close()

    anyio.run(write)
    return env


def test_memory_list_shows_what_is_in_force_with_its_provenance(stored: dict[str, str]) -> None:
    done = ctxkeep("memory", "list", env=stored)
    assert done.returncode == 0, done.stderr
    assert "purchase order approval" in done.stdout and "owner procurement director, review approved" in done.stdout
    assert (
        "Answer in English, briefly" in done.stdout and "Answer in German" not in done.stdout
    )  # the newer version wins
    assert "user message msg-17, confirmed by the user" in done.stdout
    assert "1 older, expired or scheduled version(s) not shown (--history shows them)" in done.stdout
    listed = json.loads(ctxkeep("memory", "list", "--history", "--json", env=stored).stdout)
    statuses = sorted((m["key"], m["status"]) for m in listed["memories"])
    assert statuses == [
        ("purchase order approval", "current"),
        ("reply language", "current"),
        ("reply language", "superseded"),
    ]
    policies = json.loads(ctxkeep("memory", "list", "--kind", "project_policy", "--json", env=stored).stdout)[
        "memories"
    ]
    assert [m["kind"] for m in policies] == ["project_policy"]
    found = json.loads(ctxkeep("memory", "list", "--query", "purchase orders", "--json", env=stored).stdout)["memories"]
    assert found[0]["key"] == "purchase order approval"


def test_memory_show_by_id_and_by_key(stored: dict[str, str]) -> None:
    listed = json.loads(ctxkeep("memory", "list", "--json", env=stored).stdout)["memories"]
    policy = next(m for m in listed if m["kind"] == "project_policy")
    shown = ctxkeep("memory", "show", policy["memory_id"], env=stored)
    assert shown.returncode == 0 and "from: owner procurement director, review approved" in shown.stdout
    assert (
        f"forget: ctxkeep memory forget {policy['memory_id']}" in shown.stdout
        and "effective 2026-01-01" in shown.stdout
    )
    versions = json.loads(ctxkeep("memory", "show", "reply language", "--json", env=stored).stdout)["memories"]
    assert [v["version"] for v in versions] == [2, 1] and versions[1]["status"] == "superseded"
    missing = ctxkeep("memory", "show", "no such key", env=stored)
    assert (
        missing.returncode == 1 and "`ctxkeep memory list`" in missing.stderr and "memory_search" not in missing.stderr
    )


def test_forget_needs_yes_without_a_terminal_and_then_forgets_for_good(stored: dict[str, str]) -> None:
    refused = ctxkeep("memory", "forget", "reply language", env=stored)
    assert refused.returncode == 2 and "--yes" in refused.stderr and "nothing was forgotten" in refused.stderr
    assert "Answer in English" in ctxkeep("memory", "list", env=stored).stdout
    done = ctxkeep("memory", "forget", "reply language", "--yes", "--reason", "user asked", "--json", env=stored)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert len(result["forgotten"]) == 2 and result["forgotten"][0]["reason"] == "user asked"
    assert "reply language" not in ctxkeep("memory", "list", "--history", env=stored).stdout
    gone = ctxkeep("memory", "show", result["forgotten"][0]["memory_id"], env=stored)
    assert gone.returncode == 1 and "was forgotten at" in gone.stderr and "(user asked)" in gone.stderr


def _forget_in_a_terminal(env: dict[str, str], memory_id: str, answer: bytes) -> tuple[int, bytes]:
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxkeep", "memory", "forget", memory_id],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env={**os.environ, **env},
        cwd=ROOT,
    )
    os.close(follower)
    out, deadline = b"", time.monotonic() + 60
    while b"[y/N]" not in out and time.monotonic() < deadline:
        if select.select([leader], [], [], 1)[0]:
            out += os.read(leader, 65536)
    os.write(leader, answer)
    while proc.poll() is None and time.monotonic() < deadline:
        if select.select([leader], [], [], 0.5)[0]:
            try:
                out += os.read(leader, 65536)
            except OSError:
                break
    code = proc.wait(timeout=30)
    os.close(leader)
    return code, out


def test_forget_asks_on_a_terminal_and_keeps_the_memory_unless_told_yes(stored: dict[str, str]) -> None:
    policy = json.loads(ctxkeep("memory", "list", "--kind", "project_policy", "--json", env=stored).stdout)["memories"][
        0
    ]
    code, out = _forget_in_a_terminal(stored, policy["memory_id"], b"n\n")
    assert code == 1 and b"Purchase orders over 100,000 USD" in out and b"nothing was forgotten" in out
    assert policy["memory_id"] in ctxkeep("memory", "list", env=stored).stdout
    code, out = _forget_in_a_terminal(stored, policy["memory_id"], b"y\n")
    assert code == 0 and b"forgot 1 version(s)" in out
    assert "purchase order approval" not in ctxkeep("memory", "list", env=stored).stdout


def test_journal_lists_every_side_effect_and_open_ones_apart(stored: dict[str, str]) -> None:
    done = ctxkeep("journal", env=stored)
    assert done.returncode == 0 and "1 open intent(s)" in done.stdout
    assert "refunds:8812:refund" in done.stdout and "OPEN: outcome unknown" in done.stdout
    assert "procurement:comparison-table:send" in done.stdout and "external id mail-20261130-0042" in done.stdout
    open_only = json.loads(ctxkeep("journal", "--open", "--json", env=stored).stdout)
    assert [e["idempotency_key"] for e in open_only["entries"]] == ["refunds:8812:refund"] and open_only["open"] == 1
    everything = json.loads(ctxkeep("journal", "--json", env=stored).stdout)
    assert [e["idempotency_key"] for e in everything["entries"]] == [
        "refunds:8812:refund",
        "procurement:comparison-table:send",
    ]
    assert everything["entries"][0]["params_summary"] == "42 EUR"
    task = json.loads(ctxkeep("journal", "--task", "procurement", "--json", env=stored).stdout)["entries"]
    assert [e["task_id"] for e in task] == ["procurement"]
    assert "no open intents" in ctxkeep("journal", "--open", "--task", "procurement", env=stored).stdout
