"""What the hooks showed the model, kept per session for the viewer (issue 27): every injection (the records' view at
session start or resume, the repair after a compaction, a repair delivered late), each offloaded tool output with
the view the model got and its ref, each Stop-gate block with its reason; the newest 50 of each, none of them read
back as a session record (a session's view and its injection cache are what they were)."""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import anyio
import pytest

from ctxkeep.storage import open_store
from ctxkeep.storage.hook_store import open_hot_session
from ctxkeep.storage.rows import ShownRow
from tests.claude_home import Claude, bash, compaction
from tests.clients.test_live_hooks import BIG, _edit, _view

pytestmark = pytest.mark.slow


def shown(claude: Claude, kind: str) -> list[ShownRow]:
    """The session's log of `kind`, oldest first, as the viewer reads it (through the Store)."""

    async def read() -> list[ShownRow]:
        store = await open_store(claude.db)
        try:
            async with store.snapshot() as tx:
                rows = await tx.sessions.shown(str(claude.project.resolve()), claude.session, 100)
        finally:
            await store.close()
        return [row for row in rows if row.kind == kind]

    return anyio.run(read)


def test_every_injection_of_a_session_is_kept_with_its_event_time_and_size(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.prompt("Fix the flaky login test in tests/test_login.py")
    claude.prompt("never push to main; open a pull request")
    first = claude.session_start("resume")
    assert claude.session_start("resume") == ""  # the same view is in the context already: not injected, not logged
    claude.hook(
        "post-compact",
        claude.base(
            "PostCompact", trigger="auto", compact_summary="<summary>Login test fixed; push to main.</summary>"
        ),
    )
    late = claude.output(claude.hook("user-prompt-submit", claude.base("UserPromptSubmit", prompt="go on")))
    assert late is not None
    delivered = late["hookSpecificOutput"]["additionalContext"]
    claude.append(*compaction("The login test is fixed. Next: push the fix to main."))
    repaired = claude.session_start("compact")
    assert "never push to main" in delivered and "never push to main" in repaired

    log = shown(claude, "injected")
    assert [row.text for row in log] == [first, delivered, repaired]
    assert [row.label for row in log] == [
        "the records' view (session start or resume)",
        "repair of the compaction summary (delivered with the next prompt or tool result)",
        "repair of the compaction summary",
    ]
    assert [row.at for row in log] == sorted(row.at for row in log) and len({row.at for row in log}) == 3
    assert all(row.at.startswith("20") and row.at.endswith("Z") for row in log)


def test_a_records_view_after_a_compaction_says_so(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.prompt("Migrate the billing tables")
    view = claude.session_start("compact")  # no summary in the transcript yet: the records' own view
    [row] = shown(claude, "injected")
    assert row.text == view and row.label == "the records' view (after a compaction, no summary visible yet)"


def test_a_shaped_output_is_logged_beside_its_ref_and_one_kept_in_place_says_so(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    view = _view(claude.post_tool_use(*bash("pytest -q", BIG)))
    assert claude.post_tool_use(*bash("make", BIG + "again\n"), use_id="toolu_2", CTXKEEP_SHAPE="off") is None
    [shaped, kept] = shown(claude, "offloaded")
    assert shaped.ref.startswith("ev_") and shaped.ref in view and shaped.text == view
    assert shaped.label == "shaped: the model got this view instead of the output" and shaped.source == "Bash"
    assert kept.ref.startswith("ev_") and kept.ref != shaped.ref
    assert kept.label == "offloaded: the model got the whole output (not replaced)"


def test_a_gate_block_is_logged_with_its_reason(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.post_tool_use(*bash("uv run pytest -q", "3 passed in 0.1s"), use_id="toolu_t")
    _edit(claude, "/p/src/limiter.py", "toolu_e")
    blocked = claude.stop()
    assert blocked is not None and claude.stop(active=True) is None
    [row] = shown(claude, "blocked")
    assert row.text == blocked["reason"] and row.label == "Stop blocked once" and "limiter.py" in row.text


def test_the_log_is_no_session_record_the_view_or_the_injection_cache_reads(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.prompt("Add pagination to the /users endpoint")
    view = claude.session_start("resume")
    generation = claude.rows("SELECT generation, injection_generation FROM session_hooks")
    assert view and claude.session_start("resume") == ""  # the same view again: nothing injected
    assert claude.rows("SELECT generation, injection_generation FROM session_hooks") == generation
    with closing(open_hot_session(claude.db, str(claude.project.resolve()), claude.session)) as conn:
        assert {row[0] for row in conn.records()} == {"prompt"}


def test_only_the_newest_50_of_each_kind_are_kept(tmp_path: Path) -> None:
    db = tmp_path / "hooks.db"
    with closing(open_hot_session(db, "/p", "s-1")) as conn:
        for n in range(60):
            conn.log_shown("injected", f"view {n}", f"2026-12-01T10:00:{n:02d}.000000Z", "the records' view", "", "")
        conn.log_shown("blocked", "reason", "2026-12-01T11:00:00.000000Z", "Stop blocked once", "", "")
        kept = [row for row in conn.shown() if row[0] == "injected"]
        assert [row[2] for row in kept] == [f"view {n}" for n in range(10, 60)]
        assert [row[2] for row in conn.shown() if row[0] == "blocked"] == ["reason"]


def test_codex_injections_and_gate_blocks_are_logged_too(tmp_path: Path) -> None:
    from tests.client_home import Agent

    agent = Agent(tmp_path)
    rollout = agent.codex_rollout("codex-rollout-compacted.jsonl")
    agent.hook("codex", "UserPromptSubmit", agent.base(prompt="Call probe_echo. Never push to main."))
    out = agent.output(agent.hook("codex", "SessionStart", agent.base(source="compact", transcript_path=str(rollout))))
    assert out is not None
    repaired = out["hookSpecificOutput"]["additionalContext"]
    rows = agent.rows(
        "SELECT kind, text, status FROM session_records WHERE kind IN ('injected', 'blocked') ORDER BY at"
    )
    assert rows == [("injected", repaired, "repair of the compaction summary")]
