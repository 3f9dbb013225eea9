"""The per-event hooks as Claude Code runs them: shaping and offload (PostToolUse), prompts (UserPromptSubmit), the
verification gate (Stop); garbage in, output unchanged, exit 0."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from tests.claude_home import Claude, bash
from ctxkeep.storage import open_store

pytestmark = pytest.mark.slow
BIG = (
    "\n".join(f"line {n}: building module_{n}.o ... ok" for n in range(3_000)) + "\nERROR: module_2999 failed to link\n"
)


def _view(out: dict[str, object] | None) -> str:
    assert out is not None
    shaped = out["hookSpecificOutput"]
    assert isinstance(shaped, dict) and shaped["hookEventName"] == "PostToolUse"
    replaced = shaped["updatedToolOutput"]
    return str(replaced["stdout"] if isinstance(replaced, dict) else replaced)


def _inbox(claude: Claude) -> dict[str, str]:
    return {ref: zlib.decompress(data).decode() for ref, data in claude.rows("SELECT ref, data FROM evidence_inbox")}


def test_a_large_shell_output_reaches_the_model_shaped_with_its_ref_and_is_kept_whole(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    view = _view(claude.post_tool_use(*bash("make", BIG)))
    stored = _inbox(claude)
    ref = next(iter(stored))
    assert stored[ref] == BIG  # exact (nothing in it to redact)
    assert ref in view and f'evidence_get(ref="{ref}"' in view and "ERROR: module_2999 failed to link" in view
    assert len(view.encode()) < 6_000 < len(BIG.encode())


def test_the_shaped_bash_output_has_the_shape_claude_code_accepts(tmp_path: Path) -> None:
    out = Claude(tmp_path).post_tool_use(*bash("make", BIG))
    assert out is not None
    replaced = out["hookSpecificOutput"]["updatedToolOutput"]
    assert (
        set(replaced) == {"stdout", "stderr", "interrupted"}
        and replaced["stderr"] == ""
        and replaced["interrupted"] is False
    )


def test_secrets_are_redacted_before_the_output_is_stored(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    view = _view(claude.post_tool_use(*bash("env", BIG + f"\nGITHUB_TOKEN={secret}\n")))
    assert secret not in view and all(secret not in content for content in _inbox(claude).values())
    assert secret.encode() not in claude.db.read_bytes() + (
        claude.db.with_name(claude.db.name + "-wal").read_bytes()
        if claude.db.with_name(claude.db.name + "-wal").exists()
        else b""
    )


def test_small_outputs_edits_and_ctxkeeps_own_tools_pass_through_untouched(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    assert claude.post_tool_use(*bash("ls", "a.py\nb.py\n")) is None
    assert (
        claude.post_tool_use(
            "Edit",
            {"file_path": "/p/a.py", "old_string": "x", "new_string": "y"},
            {"filePath": "/p/a.py", "structuredPatch": BIG},
        )
        is None
    )
    assert claude.post_tool_use("mcp__ctxkeep__evidence_get", {"ref": "ev_x"}, BIG) is None
    assert claude.rows("SELECT COUNT(*) FROM evidence_inbox") == [(0,)]


def test_read_is_shaped_only_when_the_user_opts_in(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    response = {
        "type": "text",
        "file": {"filePath": "/p/big.py", "content": BIG, "numLines": 3001, "startLine": 1, "totalLines": 3001},
    }
    assert claude.post_tool_use("Read", {"file_path": "/p/big.py"}, response) is None
    out = claude.post_tool_use("Read", {"file_path": "/p/big.py"}, response, use_id="toolu_2", CTXKEEP_SHAPE_READ="1")
    assert out is not None and "evidence_get" in out["hookSpecificOutput"]["updatedToolOutput"]["file"]["content"]


def test_other_mcp_servers_tools_are_shaped_as_text(tmp_path: Path) -> None:
    out = Claude(tmp_path).post_tool_use("mcp__linear__list_issues", {"team": "ENG"}, BIG)
    assert out is not None
    shaped = out["hookSpecificOutput"]
    assert (
        shaped["updatedMCPToolOutput"] == shaped["updatedToolOutput"]
        and "evidence_get" in shaped["updatedMCPToolOutput"]
    )


def test_one_switch_turns_shaping_off_but_the_output_is_still_offloaded_and_recorded(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    assert claude.post_tool_use(*bash("make", BIG), CTXKEEP_SHAPE="off") is None
    assert list(_inbox(claude).values()) == [BIG]
    assert claude.rows("SELECT kind FROM session_records WHERE kind = 'ran'") == [("ran",)]


def test_limits_are_configurable_per_tool(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    assert claude.post_tool_use(*bash("make", BIG), CTXKEEP_SHAPE_LIMITS="shell=1000000") is None
    grep = {"mode": "content", "content": "\n".join(f"a.py:{n}: match" for n in range(20)), "numLines": 20}
    assert claude.post_tool_use("Grep", {"pattern": "match"}, grep) is not None  # 20 matches > 15


def test_prompts_are_recorded_with_negated_instructions_verbatim(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.prompt("Add pagination to the /users endpoint")
    claude.prompt("don't touch the migrations folder")
    texts = [row[0] for row in claude.rows("SELECT text FROM session_records WHERE kind = 'prompt' ORDER BY at")]
    assert texts == ["Add pagination to the /users endpoint", "don't touch the migrations folder"]
    view = claude.session_start("resume")
    assert "don't touch the migrations folder" in view and "Add pagination to the /users endpoint" in view


def _edit(claude: Claude, path: str, use_id: str) -> None:
    claude.post_tool_use(
        "Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, {"filePath": path}, use_id=use_id
    )


def test_a_stop_after_an_edit_is_blocked_once_then_allowed(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.post_tool_use(*bash("uv run pytest -q", "3 passed in 0.1s"), use_id="toolu_t")
    _edit(claude, "/p/src/limiter.py", "toolu_e")
    blocked = claude.stop()
    assert blocked is not None and blocked["decision"] == "block"
    assert "limiter.py" in blocked["reason"] and "uv run pytest -q" in blocked["reason"]
    assert claude.stop(active=True) is None  # never twice in a row
    assert claude.stop() is None  # and not again for the same change


def test_a_turn_that_changed_nothing_or_verified_its_change_is_not_blocked(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    assert claude.stop() is None
    _edit(claude, "/p/src/a.py", "toolu_1")
    claude.post_tool_use(*bash("make test", "all 12 tests passed"), use_id="toolu_2")
    assert claude.stop() is None
    _edit(claude, "/p/scripts/run.sh", "toolu_3")
    claude.post_tool_use(*bash("bash scripts/run.sh", "done"), use_id="toolu_4")  # running what was written verifies it
    assert claude.stop() is None
    _edit(claude, "/p/README.md", "toolu_5")
    claude.post_tool_use(
        "Read",
        {"file_path": "/p/README.md"},
        {"type": "text", "file": {"filePath": "/p/README.md", "content": "x"}},
        use_id="toolu_6",
    )
    assert claude.stop() is None


def test_the_gate_has_an_off_switch(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    _edit(claude, "/p/a.py", "toolu_1")
    assert claude.stop(CTXKEEP_GATE="off") is None


@pytest.mark.parametrize(
    "stdin",
    [
        b"",
        b"not json",
        b"[1, 2]",
        b'{"session_id": "../../etc"}',
        b'{"session_id": 7}',
        b"\xff\xfe garbage",
        json.dumps({"session_id": "s-1", "tool_name": 5, "tool_response": [1]}).encode(),
    ],
)
@pytest.mark.parametrize(
    "event", ["post-tool-use", "user-prompt-submit", "stop", "session-start", "pre-compact", "post-compact"]
)
def test_garbage_input_exits_0_prints_nothing_and_logs(tmp_path: Path, event: str, stdin: bytes) -> None:
    claude = Claude(tmp_path)
    done = claude.hook(event, stdin)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_an_unknown_claude_code_version_with_new_fields_still_works(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    name, data, response = bash("make", BIG)
    out = claude.output(
        claude.hook(
            "post-tool-use",
            claude.base(
                "PostToolUse",
                tool_name=name,
                tool_input=data,
                tool_response={**response, "newField": {"x": 1}},
                tool_use_id="t",
                futureTopLevel=[1, 2],
            ),
        )
    )
    assert out is not None and "evidence_get" in out["hookSpecificOutput"]["updatedToolOutput"]["stdout"]


def test_a_failing_offload_never_hides_or_alters_the_output(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.db.write_bytes(b"this is not a database" * 100)
    done = claude.hook(
        "post-tool-use",
        claude.base(
            "PostToolUse",
            tool_name="Bash",
            tool_input={"command": "make"},
            tool_response={"stdout": BIG, "stderr": "", "interrupted": False},
            tool_use_id="t",
        ),
    )
    assert (done.returncode, done.stdout) == (0, b"")  # nothing printed: Claude Code keeps the original output
    assert "post-tool-use failed" in claude.logged() and BIG[:30] not in claude.logged()


def test_the_fast_hooks_import_no_pydantic_asyncio_aiosqlite_tiktoken_mcp_inspect_or_typing(tmp_path: Path) -> None:
    """Nor the standard library's slow imports: inspect (through dataclasses) costs a hook ~7 ms of a ~20 ms floor,
    typing ~3 ms (the hook modules declare their named tuples with ctxkeep.named_tuple)."""
    claude = Claude(tmp_path)
    probe = (
        "import sys, io, json\nfrom ctxkeep.cli import main\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[2].encode()))\nmain(['hook', sys.argv[1]])\n"
        "heavy = [m for m in ('pydantic', 'asyncio', 'aiosqlite', 'tiktoken', 'mcp', 'anyio', 'inspect', 'dataclasses', 'typing') "
        "if m in sys.modules]\n"
        "sys.stderr.write(json.dumps(heavy))\n"
    )
    name, data, response = bash("make", BIG)
    inputs = {
        "post-tool-use": claude.base(
            "PostToolUse", tool_name=name, tool_input=data, tool_response=response, tool_use_id="t"
        ),
        "user-prompt-submit": claude.base("UserPromptSubmit", prompt="never push to main"),
        "stop": claude.base("Stop", stop_hook_active=False),
        "session-start": claude.base("SessionStart", source="resume"),
    }
    for event, stdin in inputs.items():
        done = subprocess.run(
            [sys.executable, "-c", probe, event, json.dumps(stdin)], capture_output=True, env=claude.env(), timeout=60
        )
        assert json.loads(done.stderr.decode().strip().splitlines()[-1]) == [], event


def test_an_offloaded_output_is_evidence_under_the_ref_the_model_was_shown(tmp_path: Path) -> None:
    import anyio

    from ctxkeep.models.evidence import EvidenceGetRequest, EvidenceSearchRequest
    from ctxkeep.tools.evidence import evidence_get, evidence_search
    from ctxkeep.tools.scope import Scope

    claude = Claude(tmp_path)
    view = _view(claude.post_tool_use(*bash("make", BIG)))
    ref = next(iter(_inbox(claude)))
    assert ref in view

    async def fetch() -> tuple[str, list[str]]:
        store = await open_store(claude.db)
        try:
            scope = Scope(store=store, project=str(claude.project.resolve()))
            got = await evidence_get(scope, EvidenceGetRequest(ref=ref[:12], mode="grep", pattern="module_2999 failed"))
            hits = await evidence_search(scope, EvidenceSearchRequest(query="module_2999 failed to link"))
            return got.content, [h.ref for h in hits.hits]
        finally:
            await store.close()

    content, hits = anyio.run(fetch)
    assert "ERROR: module_2999 failed to link" in content and ref in hits
    assert claude.rows("SELECT COUNT(*) FROM evidence_inbox") == [(0,)]  # taken in once


def test_a_search_alone_finds_an_offloaded_output(tmp_path: Path) -> None:
    import anyio

    from ctxkeep.models.evidence import EvidenceSearchRequest
    from ctxkeep.tools.evidence import evidence_search
    from ctxkeep.tools.scope import Scope

    claude = Claude(tmp_path)
    claude.post_tool_use(*bash("make", BIG))
    ref = next(iter(_inbox(claude)))

    async def search() -> list[str]:
        store = await open_store(claude.db)
        try:
            scope = Scope(store=store, project=str(claude.project.resolve()))
            return [
                h.ref for h in (await evidence_search(scope, EvidenceSearchRequest(query="module_2999 failed"))).hits
            ]
        finally:
            await store.close()

    assert ref in anyio.run(search)


def test_a_foreign_sqlite_file_is_never_written_by_a_hook_and_new_folders_are_private(tmp_path: Path) -> None:
    import os
    import sqlite3
    import stat

    claude = Claude(tmp_path)
    with sqlite3.connect(claude.db) as conn:
        conn.execute("CREATE TABLE photos (id INTEGER PRIMARY KEY, path TEXT)")
    before = claude.db.read_bytes()
    assert claude.post_tool_use(*bash("make", BIG)) is None and claude.db.read_bytes() == before
    assert "not a ctxkeep database" in claude.logged()
    deep = Claude(tmp_path / "other")  # the only folders a hook makes: the default data folder's (CTXKEEP_DB unset)
    data = tmp_path / "other" / "a"
    old = os.umask(0)
    try:
        prompt = deep.base("UserPromptSubmit", prompt="hello there, new database")
        done = deep.hook("user-prompt-submit", prompt, CTXKEEP_DB="", XDG_DATA_HOME=str(data))
    finally:
        os.umask(old)
    assert done.returncode == 0 and (data / "ctxkeep" / "ctxkeep.db").is_file()
    assert stat.S_IMODE((data / "ctxkeep").stat().st_mode) == 0o700 and stat.S_IMODE(data.stat().st_mode) == 0o700
