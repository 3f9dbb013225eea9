"""A shared `serve --http` with per-user tokens (issue 19 item 4): tokens created, listed and revoked with the CLI and
stored hashed; each request works in a project its token grants, as its user, and every checkpoint version records
that user; wrong, unknown and revoked tokens and projects a token does not grant are refused alike, revealing
nothing. Real server processes, on both stores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests import http_probe
from tests.conftest import procurement_state
from tests.db_dump import database_bytes, query
from tests.http_server import free_port, http_server

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
ALPHA, BETA = "acme/webapp", "acme/billing"


def _env(db: Path, home: Path) -> dict[str, str]:
    env = {**os.environ, "CTXKEEP_DB": str(db), "XDG_DATA_HOME": str(home)}
    env.pop("CTXKEEP_HTTP_TOKEN", None)
    return env


def ctxkeep(db: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeep", *args],
        env=_env(db, home),
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def create(db: Path, home: Path, user: str, *projects: str) -> str:
    done = ctxkeep(db, home, "token", "create", "--user", user, *(f"--project={p}" for p in projects))
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@contextmanager
def serving(db: Path, home: Path, *extra: str) -> Iterator[str]:
    port = free_port()
    log = home / f"serve-{port}.log"
    home.mkdir(parents=True, exist_ok=True)
    with http_server(port, extra, _env(db, home), log, cwd=ROOT):
        yield f"http://127.0.0.1:{port}/mcp"


def call(
    url: str, token: str | None, tool: str, arguments: dict[str, Any], project: str | None = None
) -> tuple[int, Any]:
    """Initialize and call one tool with the token (and project header); (status, answer or error body)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if project is not None:
        headers["X-Ctxkeep-Project"] = project
    status, got, body = http_probe.post(
        url,
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "probe", "version": "0"},
            },
        },
        headers,
    )
    if status != 200:
        return status, json.loads(body)
    headers = {**headers, "Mcp-Session-Id": got.get("mcp-session-id", ""), "Mcp-Protocol-Version": "2025-06-18"}
    http_probe.post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    code, got, body = http_probe.post(
        url,
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
        headers,
    )
    return code, http_probe.decode(got, body)


@pytest.fixture
def home() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ctxkeep-users-") as folder:
        yield Path(folder)


def test_tokens_are_created_listed_and_revoked_and_only_their_hashes_are_stored(db_path: Path, home: Path) -> None:
    token = create(db_path, home, "alice", ALPHA, BETA)
    assert token.startswith("ckt_") and len(token) == 56
    listed = json.loads(ctxkeep(db_path, home, "token", "list", "--json").stdout)
    assert [(t["user"], t["projects"], t["revoked_at"]) for t in listed] == [("alice", sorted([ALPHA, BETA]), None)]
    assert token.split("_", 2)[2] not in json.dumps(listed)
    assert token.split("_", 2)[2].encode() not in database_bytes(db_path)  # the secret is nowhere in the database
    token_id = listed[0]["id"]
    assert ctxkeep(db_path, home, "token", "revoke", token_id).returncode == 0
    again = ctxkeep(db_path, home, "token", "revoke", token_id)
    assert again.returncode == 1 and "no live token" in again.stderr
    assert json.loads(ctxkeep(db_path, home, "token", "list", "--json").stdout)[0]["revoked_at"]


def test_each_user_works_in_the_projects_their_token_grants_and_every_version_records_the_user(
    db_path: Path, home: Path
) -> None:
    alice, bob = create(db_path, home, "alice", ALPHA), create(db_path, home, "bob", ALPHA, BETA)
    with serving(db_path, home) as url:
        status, saved = call(url, alice, "checkpoint_save", {"task_id": "proc", "state": procurement_state()})
        assert status == 200 and not saved["result"].get("isError"), saved
        status, again = call(
            url,
            bob,
            "checkpoint_save",
            {"task_id": "proc", "state": procurement_state(next_action="Call C"), "expected_version": 1},
            project=ALPHA,
        )
        assert status == 200 and not again["result"].get("isError"), again
        status, other = call(url, bob, "checkpoint_list", {}, project=BETA)
        assert (
            status == 200 and other["result"]["structuredContent"]["tasks"] == []
        )  # another project: nothing of ALPHA's
        status, loaded = call(url, alice, "checkpoint_load", {"task_id": "proc", "format": "json"})
        assert loaded["result"]["structuredContent"]["author"] == "bob"
    rows = sorted(query(db_path, "SELECT version, author, project FROM checkpoints"))
    assert rows == [(1, "alice", ALPHA), (2, "bob", ALPHA)]


def test_wrong_revoked_and_out_of_scope_requests_are_refused_without_revealing_what_exists(
    db_path: Path, home: Path
) -> None:
    alice, bob = create(db_path, home, "alice", ALPHA), create(db_path, home, "bob", BETA)
    with serving(db_path, home) as url:
        assert call(url, alice, "checkpoint_save", {"task_id": "secret-plan", "state": procurement_state()})[0] == 200
        wrong = call(url, alice[:-4] + "AAAA", "checkpoint_list", {})
        unknown = call(url, "ckt_00000000_" + "A" * 43, "checkpoint_list", {})
        garbage = call(url, "not-a-token", "checkpoint_list", {})
        missing = call(url, None, "checkpoint_list", {})
        assert wrong[0] == unknown[0] == garbage[0] == missing[0] == 401
        assert wrong[1] == unknown[1] == garbage[1] == missing[1]
        existing = call(url, bob, "checkpoint_load", {"task_id": "secret-plan"}, project=ALPHA)
        absent = call(url, bob, "checkpoint_load", {"task_id": "secret-plan"}, project="acme/nothing-here")
        assert existing[0] == absent[0] == 403
        assert existing[1]["error"].replace(ALPHA, "P") == absent[1]["error"].replace("acme/nothing-here", "P")
        assert "secret-plan" not in json.dumps(existing[1])
        token_id = json.loads(ctxkeep(db_path, home, "token", "list", "--json").stdout)[0]["id"]
        assert ctxkeep(db_path, home, "token", "revoke", token_id).returncode == 0
        revoked = call(url, alice, "checkpoint_list", {})
        assert revoked == wrong  # revoked at once, and told no more than a wrong token
        status, still = call(url, bob, "checkpoint_list", {})
        assert status == 200 and still["result"]["structuredContent"]["tasks"] == []


def test_a_token_of_several_projects_must_name_one_and_the_single_token_mode_is_refused_with_users(
    db_path: Path, home: Path
) -> None:
    both = create(db_path, home, "carol", ALPHA, BETA)
    with serving(db_path, home) as url:
        status, body = call(url, both, "checkpoint_list", {})
        assert status == 400 and "X-Ctxkeep-Project" in body["error"]
    env = {**_env(db_path, home), "CTXKEEP_HTTP_TOKEN": "x" * 40}
    refused = subprocess.run(
        [sys.executable, "-m", "ctxkeep", "serve", "--http", "--port", "1"],
        env=env,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0 and "per-user tokens" in refused.stderr and "Traceback" not in refused.stderr


def test_the_postgres_url_password_never_reaches_the_servers_log(db_path: Path, home: Path) -> None:
    """PostgreSQL only (tests/conftest.py, POSTGRES_ONLY)."""
    create(db_path, home, "alice", ALPHA)
    with serving(db_path, home):
        pass
    password = str(db_path).split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    assert all(password not in log.read_text() for log in home.glob("serve-*.log"))
