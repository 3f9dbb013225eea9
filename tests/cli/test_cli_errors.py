"""The command line's errors speak of commands a person can type: `ctxkeep tasks`, not the MCP tool checkpoint_list; a
short or ambiguous ref says how many hex digits it needs or which records it matches; `serve` says where it serves
and refuses meaningless flags and a port in use in one line each."""

from __future__ import annotations

import hashlib
import json
import os
import pty
import select
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.storage import open_store
from ctxkeep.tools.evidence import evidence_put
from ctxkeep.tools.shared.refs import evidence_ref
from ctxkeep.tools.scope import Scope
from tests.raw_stdio import FIRST_CALL
from tests.paths import TESTS

ROOT = TESTS.parent
MCP_TOOLS = (
    "checkpoint_list",
    "checkpoint_save",
    "checkpoint_load",
    "evidence_put",
    "evidence_search",
    "evidence_get",
    "memory_search",
    "memory_write",
    "memory_forget",
    "action_intent",
    "action_result",
    "build_working_set",
)


def project_env(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "project").mkdir(exist_ok=True)
    return {"CTXKEEP_DB": str(tmp_path / "cli.db"), "CTXKEEP_PROJECT": str(tmp_path / "project")}


def ctxkeep(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, **env}
    full.pop("CTXKEEP_HTTP_TOKEN", None)
    return subprocess.run(
        [sys.executable, "-m", "ctxkeep", *args], capture_output=True, text=True, env=full, timeout=120, cwd=ROOT
    )


def one_line(done: subprocess.CompletedProcess[str]) -> str:
    """The error: exactly one line on stderr (besides the one that says a new database was made), no traceback, no MCP
    tool named."""
    lines = [line for line in done.stderr.strip().splitlines() if "created a new database at" not in line]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert not [tool for tool in MCP_TOOLS if tool in lines[0]], lines[0]
    return lines[0]


def store_evidence(env: dict[str, str], contents: list[str]) -> list[str]:
    async def put() -> list[str]:
        store = await open_store(Path(env["CTXKEEP_DB"]))
        try:
            done = await evidence_put(
                Scope(store=store, project=env["CTXKEEP_PROJECT"]), [EvidenceItem(content=text) for text in contents]
            )
            return list(done.refs or [])
        finally:
            await store.close()

    return anyio.run(put)


def two_contents_sharing_a_ref_prefix(project: str, hex_digits: int = 6) -> tuple[str, str]:
    """Two texts whose refs (as evidence_put forms them in `project`) start with the same `hex_digits` hex digits."""
    seen: dict[str, str] = {}
    for n in range(1_000_000):
        text = f"build log {n}"
        ref = evidence_ref(project, hashlib.sha256(text.encode()).hexdigest(), "tool_result", None, None, None)
        prefix = ref[: 3 + hex_digits]
        if prefix in seen:
            return seen[prefix], text
        seen[prefix] = text
    raise AssertionError("no shared prefix found")


def test_an_unknown_task_points_to_ctxkeep_tasks(tmp_path: Path) -> None:
    env = project_env(tmp_path)
    for args in (["show", "nosuch"], ["handoff", "nosuch"], ["diff", "nosuch", "1", "2"], ["working-set", "nosuch"]):
        done = ctxkeep(*args, env=env)
        assert done.returncode == 1, args
        line = one_line(done)
        assert "no task 'nosuch'" in line and "ctxkeep tasks" in line, line


def test_an_unknown_version_names_the_versions_there_are(tmp_path: Path) -> None:
    env = project_env(tmp_path)
    assert ctxkeep("demo", "--db", env["CTXKEEP_DB"], env=env).returncode == 0
    done = ctxkeep("show", "fix-rate-limiter", "--version", "9", env=env)
    assert done.returncode == 1 and "has versions 1 to 2" in one_line(done)


def test_a_ref_too_short_to_identify_a_record_says_how_many_hex_digits_it_needs(tmp_path: Path) -> None:
    env = project_env(tmp_path)
    [ref] = store_evidence(env, ["freight 0.48 USD/piece"])
    done = ctxkeep("evidence", "get", ref[:7], env=env)  # ev_ + 4 hex digits
    assert done.returncode == 1
    line = one_line(done)
    assert "too short" in line and "at least 6 hex digits" in line and "has 4" in line, line
    assert ctxkeep("evidence", "get", ref[:9], env=env).returncode == 0  # 6 digits are enough


def test_a_ref_that_is_no_ref_at_all_says_what_a_ref_looks_like(tmp_path: Path) -> None:
    env = project_env(tmp_path)
    for bad in ("ev_", "ev_XYZ123", "1063"):
        done = ctxkeep("evidence", "get", bad, env=env)
        assert done.returncode == 2, bad
        assert "ev_ followed by hex digits" in done.stderr and "Traceback" not in done.stderr, done.stderr


def test_an_ambiguous_ref_lists_the_records_it_matches(tmp_path: Path) -> None:
    env = project_env(tmp_path)
    first, second = two_contents_sharing_a_ref_prefix(env["CTXKEEP_PROJECT"])
    refs = store_evidence(env, [first, second])
    shared = os.path.commonprefix(refs)
    assert len(shared) >= 9
    done = ctxkeep("evidence", "get", shared, env=env)
    assert done.returncode == 1
    line = one_line(done)
    assert "matches 2 records" in line and refs[0] in line and refs[1] in line, line
    assert f"at least {len(shared) - 3 + 1} hex digits" in line, line


def test_an_unknown_ref_points_to_ctxkeep_search(tmp_path: Path) -> None:
    env = project_env(tmp_path)
    done = ctxkeep("evidence", "get", "ev_" + "0" * 24, env=env)
    assert done.returncode == 1 and "ctxkeep search" in one_line(done)


@pytest.mark.parametrize("flags", [["--allow-remote"], ["--no-token"], ["--host", "0.0.0.0"], ["--port", "9999"]])
def test_an_http_flag_without_http_is_one_clear_line(tmp_path: Path, flags: list[str]) -> None:
    done = ctxkeep("serve", *flags, env=project_env(tmp_path))
    assert done.returncode == 2
    line = one_line(done)
    assert flags[0] in line and "--http" in line, line


def test_a_port_in_use_is_one_clear_line(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for command in (["serve", "--http"], ["ui"]):
            done = ctxkeep(*command, "--port", str(port), env=project_env(tmp_path))
            assert done.returncode == 1, command
            line = [line for line in done.stderr.strip().splitlines() if "in use" in line]
            assert line and f"127.0.0.1:{port} is in use" in line[0] and "--port" in line[0], done.stderr
            assert "Errno" not in done.stderr and "Traceback" not in done.stderr, done.stderr


def _stderr_in_a_terminal(args: list[str], env: dict[str, str], until: bytes) -> bytes:
    """Run ctxkeep with stderr on a pseudo-terminal (stdin a pipe kept open) until `until` shows; then stop it."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxkeep", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env={**os.environ, **env},
        cwd=ROOT,
    )
    os.close(follower)
    out, deadline = b"", time.monotonic() + 60
    try:
        while until not in out and time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1)
            if ready:
                try:
                    out += os.read(leader, 65536)
                except OSError:
                    break
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        os.close(leader)
    return out


@pytest.mark.slow
def test_serve_in_a_terminal_says_which_database_and_project_in_one_line(tmp_path: Path) -> None:
    env = project_env(tmp_path)
    out = _stderr_in_a_terminal(["serve"], env, b"\n").decode(errors="replace")
    lines = [line for line in out.splitlines() if line.strip() and "created a new database" not in line]
    assert len(lines) == 1, out  # (and, the first time, the line that says where the new database was made)
    assert env["CTXKEEP_DB"] in lines[0] and env["CTXKEEP_PROJECT"] in lines[0] and "stdio" in lines[0], out


@pytest.mark.slow
def test_serve_http_says_its_address_database_and_project(tmp_path: Path) -> None:
    env = project_env(tmp_path)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = _stderr_in_a_terminal(["serve", "--http", "--port", str(port)], env, b"Bearer").decode(errors="replace")
    first = out.splitlines()[0]
    assert f"http://127.0.0.1:{port}/mcp" in first and env["CTXKEEP_DB"] in first and env["CTXKEEP_PROJECT"] in first, (
        out
    )


def _serve_piped(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeep", "serve"],
        input=FIRST_CALL,
        capture_output=True,
        text=True,
        env={**os.environ, **project_env(tmp_path)},
        timeout=60,
        cwd=ROOT,
    )


def test_serve_piped_prints_nothing_before_the_protocol(tmp_path: Path) -> None:
    done = _serve_piped(tmp_path)
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()] == [0, 1]  # the protocol's answers only
    lines = done.stderr.splitlines()  # only the line that says where the new database was made, the first time
    assert len(lines) == 1 and lines[0].endswith(f"created a new database at {project_env(tmp_path)['CTXKEEP_DB']}")
    again = _serve_piped(tmp_path)
    assert len(again.stdout.splitlines()) == 2 and again.stderr == ""
