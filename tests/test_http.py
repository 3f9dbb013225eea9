"""`ctxkeep serve --http`: the same tools over Streamable HTTP on loopback; remote only with a flag and a token."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from mcp import Client

from tests.conftest import PROJECT, procurement_state

pytestmark = pytest.mark.slow
TOKEN = "t0ken-" + "x" * 30


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _serving(db_path: Path, *extra: str, token: str | None = None) -> Iterator[str]:
    port = _free_port()
    env = {**os.environ, "CTXKEEP_DB": str(db_path), "CTXKEEP_PROJECT": PROJECT, **({"CTXKEEP_HTTP_TOKEN": token} if token else {})}
    proc = subprocess.Popen([sys.executable, "-m", "ctxkeep", "serve", "--http", "--port", str(port), *extra], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read() if proc.stderr else ""
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _initialize(url: str, token: str | None) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}}}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data=body, headers=headers), timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.mark.anyio
async def test_the_same_tool_calls_over_http_on_loopback(db_path: Path) -> None:
    with _serving(db_path) as url, anyio.fail_after(60):
        async with Client(url) as client:
            saved = await client.call_tool("checkpoint_save", {"task_id": "proc", "state": procurement_state()})
            assert saved.structured_content["version"] == 1
            loaded = await client.call_tool("checkpoint_load", {"task_id": "proc"})
            assert loaded.structured_content["state"]["pending"] == ["Supplier C freight missing"]
            put = await client.call_tool("evidence_put", {"content": "Freight: 0.48 USD/piece", "task_id": "proc"})
            built = await client.call_tool("build_working_set", {"task_id": "proc", "focus": "freight", "budget_tokens": 2000})
            assert put.structured_content["ref"] in built.structured_content["evidence_refs"]
            assert "proc" in str((await client.read_resource("ctxkeep://tasks")).contents[0])


def test_bearer_token_guards_every_request(tmp_path: Path) -> None:
    with _serving(tmp_path / "db.sqlite", token=TOKEN) as url:
        assert _initialize(url, None) == 401
        assert _initialize(url, "wrong-" + "y" * 30) == 401
        assert _initialize(url, TOKEN) == 200


@pytest.mark.parametrize(("args", "token", "message"), [
    (["--host", "0.0.0.0"], None, "is not 127.0.0.1, localhost or ::1; add --allow-remote"),
    (["--host", "127.0.0.2"], None, "is not 127.0.0.1, localhost or ::1; add --allow-remote"),
    (["--host", "0.0.0.0", "--allow-remote"], None, "needs a bearer token: set CTXKEEP_HTTP_TOKEN"),
    (["--host", "127.0.0.1"], "short", "shorter than 24 characters"),
])
def test_remote_serving_needs_a_flag_and_a_token(tmp_path: Path, args: list[str], token: str | None, message: str) -> None:
    env = {**os.environ, "CTXKEEP_DB": str(tmp_path / "db.sqlite"), **({"CTXKEEP_HTTP_TOKEN": token} if token else {})}
    done = subprocess.run([sys.executable, "-m", "ctxkeep", "serve", "--http", "--port", str(_free_port()), *args],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and message in done.stderr and "Traceback" not in done.stderr
