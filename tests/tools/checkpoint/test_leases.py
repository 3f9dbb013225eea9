"""Task leases (issue 19): an executor claims a task with an owner and a lease length through checkpoint_load or
checkpoint_save; another owner's live lease refuses saves naming the holder and the expiry; resume checks report
the lease; an expired lease is taken over and the takeover is a version of the chain; racing executors and a
SIGKILLed holder. On SQLite and on PostgreSQL (db_path)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ctxkeep.errors import LeaseHeld
from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.storage import Store, open_store
from ctxkeep.tools.checkpoint import checkpoint_load, checkpoint_save
from ctxkeep.tools.checkpoint.versions import verify_chain
from ctxkeep.tools.scope import Scope
from tests.conftest import PROJECT, procurement_state, stdio_params, tool_text
from tests.paths import TESTS

pytestmark = pytest.mark.anyio
ROOT = TESTS.parent
START = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def state(**changes: Any) -> TaskState:
    return TaskState.model_validate(procurement_state(**changes))


async def save(scope: Scope, owner: str | None = None, seconds: int | None = None, **changes: Any) -> int:
    saved = await checkpoint_save(
        scope, CheckpointSaveRequest(task_id="proc", state=state(**changes), owner=owner, lease_seconds=seconds)
    )
    return saved.version


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def timed(store: Store, clock: Clock) -> Scope:
    return Scope(store, PROJECT, clock=clock)


async def test_a_save_under_another_owners_live_lease_is_refused_naming_the_holder_and_the_expiry(
    timed: Scope, clock: Clock
) -> None:
    assert await save(timed, owner="laptop-agent", seconds=300) == 1
    clock.now += timedelta(seconds=10)
    for owner in ("ci-runner", None):  # another owner, and a save that names none
        with pytest.raises(LeaseHeld) as refused:
            await save(timed, owner=owner, pending=["Supplier C freight missing", "check customs"])
        assert "'laptop-agent'" in str(refused.value) and "2026-11-30T12:05:00.000000Z" in str(refused.value)
    assert (
        await save(timed, owner="laptop-agent", pending=["Supplier C freight missing", "check customs"]) == 2
    )  # the holder saves


async def test_resume_checks_report_the_owner_and_the_expiry(timed: Scope, clock: Clock) -> None:
    await save(timed, owner="laptop-agent", seconds=300)
    loaded = await checkpoint_load(timed, "proc")
    lease = loaded.resume_checks.lease
    assert lease is not None and lease.owner == "laptop-agent" and lease.live
    assert lease.expires_at == START + timedelta(seconds=300) and lease.acquired_at == START
    assert loaded.resume_checks.warnings[0].startswith("task is leased to laptop-agent until 2026-11-30T12:05:00")
    assert "leased to laptop-agent" in loaded.brief
    mine = await checkpoint_load(timed, "proc", owner="laptop-agent", lease_seconds=300)  # a renewal: no warning
    assert not any("leased" in w for w in mine.resume_checks.warnings)
    clock.now += timedelta(seconds=601)
    expired = await checkpoint_load(timed, "proc")
    assert expired.resume_checks.lease is not None and not expired.resume_checks.lease.live
    assert expired.resume_checks.warnings[0].startswith("the lease of laptop-agent expired at 2026-11-30T12:05:00")


async def test_claiming_at_load_refuses_while_another_holds_it(timed: Scope, clock: Clock) -> None:
    await save(timed, owner="laptop-agent", seconds=300)
    with pytest.raises(
        LeaseHeld, match="claim refused: task 'proc' is leased to 'laptop-agent' until 2026-11-30T12:05:00"
    ):
        await checkpoint_load(timed, "proc", owner="ci-runner", lease_seconds=60)


async def test_an_expired_lease_is_taken_over_at_load_and_the_chain_records_it(timed: Scope, clock: Clock) -> None:
    await save(timed, owner="laptop-agent", seconds=300)
    clock.now += timedelta(seconds=301)
    taken = await checkpoint_load(timed, "proc", owner="ci-runner", lease_seconds=120)
    assert taken.version == 2 and taken.trigger == "takeover" and taken.owner == "ci-runner"
    assert taken.took_over == "laptop-agent (lease expired 2026-11-30T12:05:00.000000Z)"
    assert taken.state == state() and taken.parent_hash is not None
    assert taken.resume_checks.lease is not None and taken.resume_checks.lease.owner == "ci-runner"
    assert await verify_chain(timed, "proc") == []
    with pytest.raises(LeaseHeld, match="leased to 'ci-runner'"):  # the old holder comes back: refused
        await save(timed, owner="laptop-agent", pending=["Supplier C freight missing", "late"])
    assert await save(timed, owner="ci-runner", pending=["Supplier C freight missing", "next"]) == 3


async def test_an_expired_lease_is_taken_over_by_a_save_that_records_it(timed: Scope, clock: Clock) -> None:
    await save(timed, owner="laptop-agent", seconds=60)
    clock.now += timedelta(seconds=61)
    assert await save(timed, owner="ci-runner") == 2  # the same state: still a version, since it records the takeover
    loaded = await checkpoint_load(timed, "proc")
    assert (loaded.owner, loaded.took_over) == ("ci-runner", "laptop-agent (lease expired 2026-11-30T12:01:00.000000Z)")
    assert loaded.trigger == "manual" and await verify_chain(timed, "proc") == []


async def test_a_lease_of_zero_seconds_releases_it(timed: Scope, clock: Clock) -> None:
    await save(timed, owner="laptop-agent", seconds=300)
    await checkpoint_load(timed, "proc", owner="laptop-agent", lease_seconds=0)
    assert (await checkpoint_load(timed, "proc")).resume_checks.lease is None
    assert await save(timed, owner="ci-runner", pending=["Supplier C freight missing", "x"]) == 2  # free: no takeover
    assert (await checkpoint_load(timed, "proc")).took_over is None


async def test_the_lease_fields_go_through_the_mcp_tools(client: Client) -> None:
    saved = await client.call_tool(
        "checkpoint_save", {"task_id": "proc", "state": procurement_state(), "owner": "agent-a", "lease_seconds": 300}
    )
    assert not saved.is_error
    refused = await client.call_tool(
        "checkpoint_save", {"task_id": "proc", "state": procurement_state(next_action="x"), "owner": "agent-b"}
    )
    assert refused.is_error and "leased to 'agent-a' until" in tool_text(refused)
    held = await client.call_tool("checkpoint_load", {"task_id": "proc", "owner": "agent-b", "lease_seconds": 60})
    assert held.is_error and "claim refused" in tool_text(held)
    loaded = await client.call_tool("checkpoint_load", {"task_id": "proc", "format": "json"})
    assert loaded.structured_content["resume_checks"]["lease"]["owner"] == "agent-a"


def _claimer(db: Path, task: str, owner: str, start: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "tests.lease_claimer", str(db), task, owner, str(start)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


async def test_two_executors_racing_for_one_task_one_wins_and_the_other_is_told_who(
    db_path: Path, tmp_path: Path
) -> None:
    store = await open_store(db_path)
    try:
        for n in range(3):
            await checkpoint_save(Scope(store, "/race"), CheckpointSaveRequest(task_id=f"t{n}", state=state()))
    finally:
        await store.close()
    for n in range(3):
        start = tmp_path / f"go-{n}"
        racers = [_claimer(db_path, f"t{n}", owner, start) for owner in ("exec-a", "exec-b")]
        ready = [Path(f"{start}.{owner}.ready") for owner in ("exec-a", "exec-b")]
        deadline = time.monotonic() + 60
        while not all(r.exists() for r in ready):  # both processes opened the database and wait
            assert time.monotonic() < deadline and all(p.poll() is None for p in racers)
            time.sleep(0.01)
        start.touch()
        outputs = [proc.communicate(timeout=60) for proc in racers]
        assert [proc.returncode for proc in racers] == [0, 0], [err for _, err in outputs]
        said = dict(zip(("exec-a", "exec-b"), (out.strip() for out, _ in outputs), strict=True))
        winners = [owner for owner, out in said.items() if out == "won"]
        assert len(winners) == 1, said
        loser = "exec-b" if winners == ["exec-a"] else "exec-a"
        assert said[loser] == f"held {winners[0]}", said


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL and /bin/sh are POSIX")
async def test_a_sigkilled_holder_keeps_the_task_until_its_lease_expires_then_it_is_taken_over(
    db_path: Path, tmp_path: Path
) -> None:
    pid_file = tmp_path / "server.pid"
    plain = stdio_params(db_path)
    params = StdioServerParameters(
        command="/bin/sh",
        args=["-c", f'echo $$ > "{pid_file}"; exec "{sys.executable}" -m ctxkeep serve'],
        env=plain.env,
    )
    with anyio.fail_after(90):
        connection = Client(params)
        holder = await connection.__aenter__()
        saved = await holder.call_tool(
            "checkpoint_save",
            {"task_id": "proc", "state": procurement_state(), "owner": "worker-1", "lease_seconds": 4},
        )
        assert not saved.is_error, tool_text(saved)
        os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the holder dies without releasing anything
        try:
            await connection.__aexit__(None, None, None)
        except Exception:  # the transport reports the dead server on the way out
            pass
    store = await open_store(db_path)
    try:
        scope = Scope(store, PROJECT)
        with pytest.raises(LeaseHeld, match="leased to 'worker-1'"):
            await save(scope, owner="worker-2", pending=["Supplier C freight missing", "resume"])
        later = Scope(store, PROJECT, clock=lambda: datetime.now(timezone.utc) + timedelta(seconds=5))
        taken = await checkpoint_load(later, "proc", owner="worker-2", lease_seconds=60)  # the 4 s lease has expired
        assert (
            taken.trigger == "takeover"
            and taken.took_over is not None
            and taken.took_over.startswith("worker-1 (lease expired")
        )
        assert await verify_chain(scope, "proc") == []
    finally:
        await store.close()
