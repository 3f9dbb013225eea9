"""PostgreSQL stopped, restarted, terminated (pg_terminate_backend) and paused (SIGSTOP) under a running stdio server
and a running `serve --http` with user tokens (issue 25): while it is down every call gets one clear error that names
the database (never its password) and says it is unreachable or slow, in seconds, never a hang, a bare "Error
executing tool" or a plain 500; once it is back, service resumes within seconds by itself; no acknowledged write is
lost. Each test runs a PostgreSQL server of its own (tests/pg_server.py), never the shared one."""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import pytest

from tests import http_probe
from tests.http_server import free_port, http_server
from tests.pg_server import OwnPostgres, own_postgres
from tests.raw_stdio import RawServer
from tests.paths import TESTS

pytestmark = pytest.mark.slow
ROOT = TESTS.parent
TIMEOUT_MS = 1500  # CTXKEEP_DB_TIMEOUT_MS for these servers: a paused database is named within a few seconds
BACK_WITHIN_S = 10.0
T = TypeVar("T")


@pytest.fixture
def pg() -> Iterator[OwnPostgres]:
    with own_postgres() as server:
        yield server


@pytest.fixture
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ctxkeep-outage-") as name:
        yield Path(name)


def within(seconds: float, work: Callable[[], T]) -> tuple[T, float]:
    """`work()`'s result and how long it took; fails the test (instead of hanging it) after `seconds`."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        started = time.monotonic()
        future = pool.submit(work)
        try:
            return future.result(timeout=seconds), time.monotonic() - started
        except TimeoutError:
            pytest.fail(f"no answer within {seconds} s: the server hangs", pytrace=False)


def tool_text(answer: dict[str, Any]) -> str:
    result = answer.get("result") or {}
    return " ".join(part.get("text", "") for part in result.get("content", []))


def is_error(answer: dict[str, Any]) -> bool:
    return "error" in answer or bool((answer.get("result") or {}).get("isError"))


def assert_names_the_database(answer: dict[str, Any], pg: OwnPostgres, *words: str) -> None:
    """A tool error (or JSON-RPC error) naming the database by host and port, saying one of `words`, no password."""
    text = tool_text(answer) if "result" in answer else str(answer["error"]["message"])
    password = pg.url.split(":")[2].split("@", 1)[0]
    port = pg.url.rsplit(":", 1)[1].split("/", 1)[0]
    assert is_error(answer), answer
    assert "Error executing tool" not in text and "Traceback" not in text, text
    assert f"127.0.0.1:{port}" in text and password not in text, text
    assert any(word in text for word in words), text


class Stdio:
    """A stdio server on the test's PostgreSQL, with a numbered call that fails the test instead of hanging."""

    def __init__(self, pg: OwnPostgres, log: Path) -> None:
        self.server = RawServer(
            pg.url,  # type: ignore[arg-type]
            log=log,
            CTXKEEP_PROJECT="/outage",
            CTXKEEP_DB_TIMEOUT_MS=str(TIMEOUT_MS),
            XDG_DATA_HOME=str(log.parent / "xdg"),
        )
        self.next_id = 100
        self.lock = threading.Lock()

    def call(self, tool: str, arguments: dict[str, Any], limit: float = 30.0) -> tuple[dict[str, Any], float]:
        with self.lock:
            self.next_id += 1
            request = self.next_id
            return within(limit, lambda: self.server.call(request, tool, arguments))

    def save(self, version: int, limit: float = 30.0) -> tuple[dict[str, Any], float]:
        state = {"goal": "Survive outages", "completed": [f"step {n}" for n in range(1, version + 1)]}
        return self.call("checkpoint_save", {"task_id": "t", "state": state, "expected_version": version - 1}, limit)

    def until_served(self, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], float]:
        """Call until it succeeds; the answer and the seconds it took from now (fails after BACK_WITHIN_S)."""
        started = time.monotonic()
        while True:
            answer, _ = self.call(tool, arguments)
            if not is_error(answer):
                return answer, time.monotonic() - started
            assert time.monotonic() - started < BACK_WITHIN_S, f"still failing {BACK_WITHIN_S} s later: {answer}"
            time.sleep(0.2)


def latest(pg: OwnPostgres, project: str, task: str) -> int:
    async def run() -> int:
        import asyncpg

        conn = await asyncpg.connect(pg.url)
        try:
            value = await conn.fetchval(
                "SELECT latest_version FROM tasks WHERE project = $1 AND task_id = $2", project, task
            )
            return int(value or 0)
        finally:
            await conn.close()

    return asyncio.run(run())


def count(pg: OwnPostgres, table: str, project: str) -> int:
    async def run() -> int:
        import asyncpg

        conn = await asyncpg.connect(pg.url)
        try:
            return int(await conn.fetchval(f"SELECT count(*) FROM {table} WHERE project = $1", project))
        finally:
            await conn.close()

    return asyncio.run(run())


def test_a_stdio_server_started_while_postgres_is_down_serves_once_it_is_back(pg: OwnPostgres, folder: Path) -> None:
    pg.stop()
    stdio = Stdio(pg, folder / "serve.log")  # the handshake works without the database
    try:
        answer, took = stdio.save(1)
        assert_names_the_database(answer, pg, "unreachable")
        assert took < 5
        pg.start()
        answer, back_after = stdio.until_served("checkpoint_list", {})
        assert back_after < BACK_WITHIN_S
        answer, _ = stdio.save(1)
        assert not is_error(answer), answer
        assert latest(pg, "/outage", "t") == 1
    finally:
        stdio.server.close()
    log = (folder / "serve.log").read_text()
    assert "Traceback" not in log and "tries again" in log, log


def test_stopped_restarted_terminated_and_paused_under_a_running_stdio_server(pg: OwnPostgres, folder: Path) -> None:
    stdio = Stdio(pg, folder / "serve.log")
    acknowledged = 0
    try:
        for _ in range(3):
            answer, _ = stdio.save(acknowledged + 1)
            assert not is_error(answer), answer
            acknowledged += 1

        pg.stop()  # stopped: a clear error at once, for a write and a read
        for tool, arguments in (
            ("evidence_put", {"content": "written while down"}),
            ("checkpoint_load", {"task_id": "t"}),
        ):
            answer, took = stdio.call(tool, arguments)
            assert_names_the_database(answer, pg, "unreachable")
            assert took < 5, took
        answer, _ = stdio.save(acknowledged + 1)
        assert_names_the_database(answer, pg, "unreachable")
        pg.start()  # restarted: served again within seconds, by itself
        stdio.until_served("checkpoint_load", {"task_id": "t"})
        answer, _ = stdio.save(acknowledged + 1)
        assert not is_error(answer), answer
        acknowledged += 1

        assert pg.terminate() >= 1  # terminated: the pool replaces the dead connection
        answer, _ = stdio.save(acknowledged + 1)
        if is_error(answer):
            assert_names_the_database(answer, pg, "unreachable")
            answer, _ = stdio.save(acknowledged + 1)
        assert not is_error(answer), answer
        acknowledged += 1

        pg.pause()  # paused: slow or unreachable, said within the time limit, never a hang
        answer, took = stdio.save(acknowledged + 1, limit=30)
        assert_names_the_database(answer, pg, "did not answer", "slow", "unreachable")
        assert took < TIMEOUT_MS / 1000 + 8, took
        pg.resume()
        stdio.until_served("checkpoint_load", {"task_id": "t"})
        answer, _ = stdio.save(acknowledged + 1)
        if is_error(answer) and "version conflict" in tool_text(answer):  # the paused save committed after all
            acknowledged += 1
            answer, _ = stdio.save(acknowledged + 1)
        assert not is_error(answer), answer
        acknowledged += 1
    finally:
        pg.resume()
        stdio.server.close()
    assert latest(pg, "/outage", "t") == acknowledged  # every acknowledged save is there, none twice
    log = (folder / "serve.log").read_text()
    assert "Traceback" not in log, log


def test_saves_and_puts_racing_terminated_backends_get_clear_errors_and_lose_nothing(
    pg: OwnPostgres, folder: Path
) -> None:
    stdio = Stdio(pg, folder / "serve.log")
    stop = threading.Event()

    def terminating() -> None:
        while not stop.is_set():
            pg.terminate()
            time.sleep(0.25)

    killer = threading.Thread(target=terminating)
    put, failed = 0, 0
    try:
        stdio.save(1)
        killer.start()
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            answer, _ = stdio.call("evidence_put", {"content": f"item {put + failed} " + "x" * 2000})
            if is_error(answer):
                assert_names_the_database(answer, pg, "unreachable")
                failed += 1
            else:
                put += 1
        stop.set()
        killer.join()
        answer, _ = stdio.until_served("evidence_put", {"content": "after the terminations"})
        put += 1
    finally:
        stop.set()
        stdio.server.close()
    assert put > 5 and count(pg, "evidence", "/outage") >= put, (put, failed)  # a failed put may have committed


def _http_env(pg: OwnPostgres, home: Path) -> dict[str, str]:
    env = {
        **os.environ,
        "CTXKEEP_DB": pg.url,
        "XDG_DATA_HOME": str(home),
        "CTXKEEP_DB_TIMEOUT_MS": str(TIMEOUT_MS),
    }
    env.pop("CTXKEEP_HTTP_TOKEN", None)
    return env


def _token(pg: OwnPostgres, home: Path) -> str:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "ctxkeep", "token", "create", "--user", "alice", "--project", "/team"],
        env=_http_env(pg, home),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}


def _http_call(url: str, token: str, version: int) -> tuple[int, dict[str, str], Any]:
    """Initialize and save version `version` of task t; (status, headers, answer)."""
    headers = {"Authorization": f"Bearer {token}"}
    status, got, body = http_probe.post(url, INITIALIZE, headers)
    if status != 200:
        return status, got, json.loads(body)
    headers = {**headers, "Mcp-Session-Id": got.get("mcp-session-id", ""), "Mcp-Protocol-Version": "2025-06-18"}
    http_probe.post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    state = {"goal": "Shared work", "completed": [f"step {n}" for n in range(1, version + 1)]}
    arguments = {"task_id": "t", "state": state, "expected_version": version - 1}
    status, got, body = http_probe.post(
        url,
        {
            "jsonrpc": "2.0",
            "id": 8,
            "method": "tools/call",
            "params": {"name": "checkpoint_save", "arguments": arguments},
        },
        headers,
    )
    return status, got, http_probe.decode(got, body)


class Http:
    """A `serve --http` with user tokens on the test's PostgreSQL; counts the saves it acknowledged."""

    def __init__(self, url: str, token: str) -> None:
        self.url, self.token, self.acknowledged = url, token, 0

    def save(self, limit: float = 15) -> tuple[tuple[int, dict[str, str], Any], float]:
        version = self.acknowledged + 1
        return within(limit, lambda: _http_call(self.url, self.token, version))

    def until_served(self) -> None:
        """Save until acknowledged (a save that committed while its answer was lost shows as a version conflict)."""
        started = time.monotonic()
        while True:
            (status, _, answer), _ = self.save()
            if status == 200 and not is_error(answer):
                self.acknowledged += 1
                return
            if "version conflict" in json.dumps(answer):
                self.acknowledged += 1
                continue
            assert time.monotonic() - started < BACK_WITHIN_S, (status, answer)
            time.sleep(0.2)


def _stopped(http: Http, pg: OwnPostgres, log: Path) -> None:
    pg.stop()
    lines_before = len(log.read_text().splitlines())
    for _ in range(3):
        (status, headers, answer), took = http.save()
        assert status == 503 and headers.get("retry-after"), (status, answer)
        assert answer["jsonrpc"] == "2.0" and answer["id"] == 7 and answer["error"]["code"] == -32000, answer
        assert_names_the_database(answer, pg, "unreachable")
        assert took < 5
    written = log.read_text().splitlines()[lines_before:]
    assert "Traceback" not in "\n".join(written)
    assert sum("answered 503" in line for line in written) == 3, written  # one line per refused request
    pg.start()
    http.until_served()


def _terminated(http: Http, pg: OwnPostgres) -> None:
    assert pg.terminate() >= 1
    (status, _, answer), _ = http.save()
    if status == 200 and not is_error(answer):
        http.acknowledged += 1
    else:
        assert_names_the_database(answer, pg, "unreachable")
    http.until_served()


def _paused(http: Http, pg: OwnPostgres) -> None:
    pg.pause()
    (status, _, answer), took = http.save(limit=30)
    assert status == 503 or is_error(answer), answer
    assert_names_the_database(answer, pg, "did not answer", "slow", "unreachable")
    assert took < TIMEOUT_MS / 1000 + 8, took
    pg.resume()
    http.until_served()


def test_a_serve_http_with_user_tokens_answers_503_while_postgres_is_down_and_serves_when_it_is_back(
    pg: OwnPostgres, folder: Path
) -> None:
    home = folder / "home"
    home.mkdir()
    token = _token(pg, home)
    port = free_port()
    log = folder / "http.log"
    with http_server(port, (), _http_env(pg, home), log, cwd=ROOT):
        http = Http(f"http://127.0.0.1:{port}/mcp", token)
        http.until_served()
        _stopped(http, pg, log)
        _terminated(http, pg)
        _paused(http, pg)
    assert latest(pg, "/team", "t") == http.acknowledged
    assert "Traceback" not in log.read_text()
