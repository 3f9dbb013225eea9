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
from tests.db_dump import database_bytes, is_postgres, query
from tests.http_server import free_port, http_server
from tests.paths import TESTS

pytestmark = pytest.mark.slow
ROOT = TESTS.parent
ALPHA, BETA = "/acme/webapp", "/acme/billing"


def _env(db: Path, home: Path) -> dict[str, str]:
    env = {**os.environ, "CTXKEEP_DB": str(db), "XDG_DATA_HOME": str(home), "HOME": str(home)}
    env.pop("CTXKEEP_HTTP_TOKEN", None)
    env.pop("CLAUDE_CONFIG_DIR", None)
    return env


def ctxkeep(db: Path, home: Path, *args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeep", *args],
        env=_env(db, home),
        cwd=cwd,
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
    status, got, body = http_probe.post(url, http_probe.INITIALIZE, headers)
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


def _result(answer: Any) -> tuple[bool, str, Any]:
    """(is an error, its text, the structured content) of a tools/call answer."""
    result = answer["result"]
    text = "\n".join(block.get("text", "") for block in result.get("content", []))
    return bool(result.get("isError")), text, result.get("structuredContent")


def _transcript_lines() -> str:
    records = [
        {"type": "user", "message": {"role": "user", "content": "Fix the login bug"}},
        {
            "type": "assistant",
            "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "On it."}]},
        },
    ]
    return "\n".join(json.dumps(record) for record in records) + "\n"


def test_a_remote_user_never_makes_the_server_read_its_files_and_no_refusal_shows_a_server_path(
    db_path: Path, home: Path
) -> None:
    """Issue 24 item 12: with user tokens, transcript_path is refused outright (never resolved), the refusal names no
    path of the server; the transcript is sent as content instead."""
    token = create(db_path, home, "bob", ALPHA)
    sessions = home / ".claude" / "projects" / "-srv-other-project"
    sessions.mkdir(parents=True)
    (sessions / "operator.jsonl").write_text(_transcript_lines())
    with serving(db_path, home) as url:
        for path in (
            str(sessions / "operator.jsonl"),
            "~/.claude/projects/-srv-other-project/operator.jsonl",
            "../../etc/passwd",
            "/nonexistent/x.jsonl",
        ):
            status, answer = call(url, token, "compress_history", {"transcript_path": path})
            error, text, _ = _result(answer)
            assert status == 200 and error and "transcript" in text, answer
            assert str(home) not in json.dumps(answer) and ".claude" not in text and "resolves" not in text
            assert "/etc" not in text and "nonexistent" not in text
        status, answer = call(url, token, "compress_history", {"transcript": _transcript_lines(), "keep_recent": 1})
        error, text, content = _result(answer)
        assert status == 200 and not error, text
        assert (
            content["format"] == "claude_code" and content["messages"][0]["content"][0]["text"] == "Fix the login bug"
        )


def test_a_lease_belongs_to_the_tokens_user_and_naming_another_owner_is_refused(db_path: Path, home: Path) -> None:
    """Issue 24 item 13: bob, refused because alice holds the lease, can neither save, extend nor release it by naming
    her owner id."""
    alice, bob = create(db_path, home, "alice", ALPHA), create(db_path, home, "bob", ALPHA)
    with serving(db_path, home) as url:
        args = {"task_id": "proc", "state": procurement_state(), "owner": "alice", "lease_seconds": 600}
        status, saved = call(url, alice, "checkpoint_save", args)
        assert status == 200 and not _result(saved)[0], saved
        status, held = call(
            url, bob, "checkpoint_save", {**args, "owner": "bob", "state": procurement_state(next_action="x")}
        )
        assert _result(held)[0] and "leased to 'alice'" in _result(held)[1]
        for tool, arguments in (
            ("checkpoint_save", {**args, "state": procurement_state(next_action="bob as alice")}),
            ("checkpoint_load", {"task_id": "proc", "owner": "alice", "lease_seconds": 86_400}),
            ("checkpoint_load", {"task_id": "proc", "owner": "alice", "lease_seconds": 0}),
        ):
            status, answer = call(url, bob, tool, arguments)
            error, text, _ = _result(answer)
            assert status == 200 and error and "'bob'" in text and "owner" in text, (tool, text)
        status, loaded = call(url, alice, "checkpoint_load", {"task_id": "proc", "format": "json"})
        lease = _result(loaded)[2]["resume_checks"]["lease"]
        assert lease["owner"] == "alice" and lease["live"]
        assert lease["expires_at"] < "9999" and _result(loaded)[2]["version"] == 1
    rows = query(db_path, "SELECT owner, expires_at FROM task_leases")
    assert [row[0] for row in rows] == ["alice"]


def test_a_token_created_while_the_server_runs_is_taken_at_the_next_request_and_the_shared_token_no_more(
    db_path: Path, home: Path
) -> None:
    """Issue 24 item 14: the token mode is read per request."""
    with serving(db_path, home) as url:
        folder = home / "ctxkeep" if is_postgres(db_path) else db_path.parent  # the token file is beside the database
        shared = (folder / "http-token").read_text().strip()
        status, _ = call(url, shared, "checkpoint_list", {})
        assert status == 200
        token = create(db_path, home, "alice", ALPHA)
        status, answer = call(url, token, "checkpoint_list", {})
        assert status == 200 and not _result(answer)[0]
        status, refused = call(url, shared, "checkpoint_list", {})
        assert status == 401 and "ckt_" in refused["error"]


def test_token_projects_are_normalized_as_every_command_names_a_project(db_path: Path, home: Path) -> None:
    """Issue 24 item 16: a trailing slash and a relative path are stored as the key local commands use; a header with a
    trailing slash names the same project."""
    work = home / "work"
    (work / "acme" / "webapp").mkdir(parents=True)
    trailing = create(db_path, home, "alice", "/acme/webapp/")
    done = ctxkeep(db_path, home, "token", "create", "--user", "bob", "--project", "acme/webapp", cwd=work)
    assert done.returncode == 0, done.stderr
    listed = json.loads(ctxkeep(db_path, home, "token", "list", "--json").stdout)
    assert [t["projects"] for t in listed] == [["/acme/webapp"], [os.path.realpath(work / "acme" / "webapp")]]
    with serving(db_path, home) as url:
        status, saved = call(
            url, trailing, "checkpoint_save", {"task_id": "proc", "state": procurement_state()}, "/acme/webapp/"
        )
        assert status == 200 and not _result(saved)[0], saved
    assert query(db_path, "SELECT project FROM checkpoints") == [("/acme/webapp",)]
    local = subprocess.run(
        [sys.executable, "-m", "ctxkeep", "tasks", "--json"],
        env={**_env(db_path, home), "CTXKEEP_PROJECT": "/acme/webapp/"},
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert [t["task_id"] for t in json.loads(local.stdout)["tasks"]] == ["proc"], local.stderr


@pytest.mark.anyio
async def test_a_remote_users_errors_never_show_the_servers_database_or_home(tmp_path: Path) -> None:
    """Issue 24 item 12: an error that names the server's database file (here: it cannot be opened) reaches a remote
    user with that path hidden; the operator, over stdio, still sees it."""
    from mcp import Client

    from ctxkeep.server import build_server
    from ctxkeep.server.principal import PRINCIPAL, Principal
    from ctxkeep.settings import Settings

    broken = tmp_path / "a-folder-not-a-database"
    broken.mkdir()
    server = build_server(Settings(db_path=broken, project=ALPHA))
    async with Client(server) as local:
        assert str(broken) in _text_of(await local.call_tool("checkpoint_list", {}))
    token = PRINCIPAL.set(Principal("bob", ALPHA))
    try:
        async with Client(build_server(Settings(db_path=broken, project=ALPHA))) as remote:
            shown = _text_of(await remote.call_tool("checkpoint_list", {}))
    finally:
        PRINCIPAL.reset(token)
    assert shown and str(tmp_path) not in shown and str(Path.home()) not in shown, shown


def _text_of(result: Any) -> str:
    assert result.is_error
    return "\n".join(block.text for block in result.content if hasattr(block, "text"))
