"""PreCompact, SessionStart and PostCompact on real transcripts, as Claude Code runs them: the records survive a
compaction, Claude Code's summary is checked and repaired, bad input never fails the user."""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.claude_home import DATA, MAX_CHARS, ROOT, Claude, bash, compaction, tool_result, tool_use, user

pytestmark = pytest.mark.slow
TRANSCRIPTS = DATA / "claude-code-transcripts"
MORE = DATA / "claude-code-transcripts-more"
NEEDS_DATA = pytest.mark.skipif(
    not TRANSCRIPTS.is_dir() or not MORE.is_dir(), reason="../shared/data/claude-code-transcripts* is absent"
)


def first_prompt(path: Path) -> str:
    """The session's first typed prompt, read independently of ctxkeep: the first user record with string content."""
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        content = record.get("message", {}).get("content") if record.get("type") == "user" else None
        if isinstance(content, str) and not record.get("isMeta"):
            args = re.search(r"<command-args>(.*?)</command-args>", content, re.DOTALL)
            return " ".join((args.group(1) if args else content).split())
    raise AssertionError(f"{path.name} has no typed prompt")


def cut(source: Path, claude: Claude, lines: int) -> None:
    """The session's transcript as it was after its first `lines` lines."""
    claude.transcript.write_text(
        "\n".join(source.read_text(encoding="utf-8").splitlines()[:lines]) + "\n", encoding="utf-8"
    )


@NEEDS_DATA
@pytest.mark.parametrize("name", sorted(p.name for p in TRANSCRIPTS.glob("*.jsonl")) if TRANSCRIPTS.is_dir() else [])
def test_pre_compact_then_session_start_carries_the_goal(tmp_path: Path, name: str) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / name)
    done = claude.pre_compact()
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    context = claude.session_start("resume")
    assert first_prompt(claude.transcript)[:60] in " ".join(context.split())
    assert 'checkpoint_load(task_id="cc-s-1")' in context
    assert claude.rows("SELECT task_id, trigger FROM checkpoints") == [("cc-s-1", "pre_compact")]
    evidence = claude.rows("SELECT count(*) FROM evidence")
    again = claude.pre_compact()
    assert again.returncode == 0
    assert again.stdout.startswith(b"ctxkeep: the session's records hold")  # for Claude Code's summarizer, as text
    assert claude.rows("SELECT count(*) FROM evidence") == evidence  # nothing new was ingested
    assert "transcript unchanged" in claude.logged().splitlines()[-1]


@NEEDS_DATA
def test_a_rule_read_from_a_spec_survives_two_compactions(tmp_path: Path) -> None:
    # 258c7280 reads its task specs with `bd show`; gqc.6's spec says "No extra state values, review entities, or reopen workflow."
    source = TRANSCRIPTS / "258c7280-ae70-4798-800f-63464d01a85d.jsonl"
    claude = Claude(tmp_path)
    rule = "No extra state values, review entities, or reopen workflow."
    cut(source, claude, 1255)
    assert rule in source.read_text() and claude.pre_compact().returncode == 0
    claude.append(
        *compaction("We implemented gqc.1 to gqc.5 and are working on gqc.6, the close review session button.")
    )
    first = claude.session_start("compact")
    assert f"> {rule}" in first and "from Bash: bd show spotter-gqc" in first  # quoted, under its source
    claude.append(user("now finish gqc.6 and start gqc.7", at="2026-12-01T10:00:00Z"))
    assert claude.pre_compact().returncode == 0
    claude.append(*compaction("gqc.6 is nearly done. Next: gqc.7."))
    second = claude.session_start("compact")
    assert rule in second and "now finish gqc.6 and start gqc.7" in second
    assert all(f"- {rule}" not in text for text in (first, second))  # quoted data, never one of our instructions


@NEEDS_DATA
def test_a_summary_that_turns_pending_into_done_or_drops_a_never_is_flagged_and_repaired(tmp_path: Path) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / "short.jsonl")
    claude.append(
        user("never run the migrations against the staging database", at="2026-11-30T09:10:00Z"),
        tool_use(
            "TodoWrite",
            {
                "todos": [
                    {"content": "Free port 4000", "status": "completed"},
                    {"content": "Write the regression test for the port check", "status": "pending"},
                ]
            },
            "t1",
        ),
        tool_result("t1", "Todos have been modified successfully"),
    )
    assert claude.pre_compact().returncode == 0
    claude.append(
        *compaction(
            "Freed port 4000. Wrote the regression test for the port check: done. All tasks are complete. "
            "Run the migrations against the staging database next."
        )
    )
    repair = claude.session_start("compact")
    assert "never run the migrations against the staging database" in repair
    assert "Write the regression test for the port check" in repair
    assert "Free port 4000" not in repair  # the summary carries it: never repeated
    summary = claude.rows("SELECT summary FROM task_digests WHERE task_id = 'cc-s-1'")[0][0]
    assert (
        summary.startswith("[checked by ctxkeep against the session's records:") and "summary_negation_lost" in summary
    )


@NEEDS_DATA
def test_the_repair_names_the_saved_tasks_open_approval_exact_value_and_done_side_effect_the_summary_lost(
    tmp_path: Path,
) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / "short.jsonl")
    state = {
        "goal": "Pay supplier C",
        "completed": ["Sent the payment notice to supplier C"],
        "facts": [{"key": "invoice total", "value": 184300, "unit": "EUR"}],
        "approvals": [{"id": "PO-7731", "action": "issue the purchase order", "status": "pending"}],
    }
    claude.save_task("pay-c", state)
    claude.append(
        tool_use("mcp__ctxkeep__checkpoint_save", {"task_id": "pay-c", "state": state}, "toolu_save1"),
        tool_result("toolu_save1", "saved pay-c v1"),
    )
    assert claude.pre_compact().returncode == 0
    claude.append(*compaction("We are paying supplier C (task pay-c). Next: pay."))
    repair = claude.session_start("compact")
    for lost in ("PO-7731", "184300", "Sent the payment notice to supplier C"):
        assert lost in repair.replace(",", ""), (lost, repair)


@NEEDS_DATA
@pytest.mark.parametrize(
    "records",
    [
        [],  # a boundary without its summary
        [
            {"type": "system", "subtype": "compact_boundary"},
            {"type": "user", "isCompactSummary": True, "message": {"content": [{"type": "image"}]}},
        ],
        [
            {"type": "system", "subtype": "compact_boundary"},
            {"type": "user", "isCompactSummary": True, "message": "not an object"},
        ],
        compaction("first summary") + compaction("second summary, of a summary"),
        [{"type": "user", "isCompactSummary": True, "message": {"content": "a summary without its boundary"}}],
    ],
)
def test_odd_summaries_never_crash_the_hook_which_then_injects_the_records_view(
    tmp_path: Path, records: list[dict[str, object]]
) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / "short.jsonl")
    assert claude.pre_compact().returncode == 0
    claude.append(*records)
    context = claude.session_start("compact")
    assert first_prompt(TRANSCRIPTS / "short.jsonl")[:40] in " ".join(
        context.split()
    ) or "second summary" in json.dumps(records)
    assert len(json.dumps(context)) <= MAX_CHARS


@NEEDS_DATA
def test_a_session_whose_agent_saved_a_task_is_bound_to_it(tmp_path: Path) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / "short.jsonl")
    state = {
        "goal": "Get mix phx.server to start on port 4001",
        "constraints": ["Do not touch the production config"],
        "pending": ["Find what holds port 4000"],
    }
    claude.save_task("phx-start", state)
    claude.append(
        tool_use("mcp__ctxkeep__checkpoint_save", {"task_id": "phx-start", "state": state}, "toolu_save1"),
        tool_result("toolu_save1", "saved phx-start v1"),
    )
    assert claude.pre_compact().returncode == 0
    context = claude.session_start("resume")
    for text in ("Task phx-start", state["goal"], "Do not touch the production config", "Find what holds port 4000"):
        assert text in context
    assert [row[0] for row in claude.rows("SELECT DISTINCT task_id FROM checkpoints")] == ["phx-start"]
    assert claude.rows("SELECT task_id, bound FROM sessions") == [("phx-start", 1)]
    claude.append(
        tool_use(
            "TodoWrite",
            {
                "todos": [
                    {"content": "Find what holds port 4000", "status": "completed"},
                    {"content": "Kill the stale beam process", "status": "in_progress"},
                ]
            },
            "toolu_todo9",
        ),
        tool_result("toolu_todo9", "Todos have been modified successfully"),
    )
    assert claude.pre_compact().returncode == 0
    versions = claude.rows("SELECT version, trigger, violations_json, state_json FROM checkpoints ORDER BY version")
    assert [(v, trigger, violations) for v, trigger, violations, _ in versions] == [
        (1, "manual", "[]"),
        (2, "pre_compact", "[]"),
    ]
    latest = json.loads(versions[-1][3])
    assert (latest["pending"], latest["completed"]) == (["Kill the stale beam process"], ["Find what holds port 4000"])
    assert latest["constraints"] == state["constraints"] and latest["goal"] == state["goal"]


@NEEDS_DATA
def test_todo_lists_become_pending_and_completed_and_each_version_verifies(tmp_path: Path) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / "tool_heavy.jsonl")
    claude.append(
        tool_use(
            "TodoWrite",
            {
                "todos": [
                    {"content": "Find why scrollback fails", "status": "completed"},
                    {"content": "Patch the xterm.js wheel handler", "status": "in_progress"},
                    {"content": "Write a regression test", "status": "pending"},
                    {"content": "Update the changelog", "status": "pending"},
                ]
            },
            "td1",
        ),
        tool_result("td1", "Todos have been modified successfully"),
    )
    assert claude.pre_compact().returncode == 0
    context = claude.session_start("resume")
    pending = context[context.index("## Still pending") : context.index("## State of the work")]
    assert (
        "Patch the xterm.js wheel handler" in pending
        and "Update the changelog" in pending
        and "Find why scrollback" not in pending
    )
    claude.append(
        tool_use(
            "TodoWrite",
            {
                "todos": [
                    {"content": "Find why scrollback fails", "status": "completed"},
                    {"content": "Patch the xterm.js wheel handler", "status": "completed"},
                    {"content": "Write a regression test", "status": "in_progress"},
                ]
            },
            "td2",
        ),
        tool_result("td2", "Todos have been modified successfully"),
    )
    assert claude.pre_compact().returncode == 0
    versions = claude.rows("SELECT version, violations_json, state_json FROM checkpoints ORDER BY version")
    assert [(v, violations) for v, violations, _ in versions] == [(1, "[]"), (2, "[]")]  # strict saves
    latest = json.loads(versions[-1][2])
    assert latest["pending"] == ["Write a regression test"]
    assert {
        "kind": "pending",
        "item": "Update the changelog",
        "reason": "no longer on the agent's todo list",
    } in latest["dropped"]


@NEEDS_DATA
def test_resume_before_any_compaction_injects_the_sessions_records_and_another_session_gets_nothing(
    tmp_path: Path,
) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / "short.jsonl")
    claude.prompt("keep the fix minimal")  # captured live, no compaction yet
    assert "keep the fix minimal" in claude.session_start("resume")
    assert claude.session_start("resume", session_id="another-session") == ""  # a second terminal


def test_the_output_is_ascii_json_whatever_the_terminal_encoding(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.save_task("cjk", {"goal": "修复登录 bug 🙂", "pending": ["不要修改数据库"]}, bind=True)
    done = subprocess.run(
        [sys.executable, "-m", "ctxkeep", "hook", "session-start"],
        input=json.dumps(claude.base("SessionStart", source="resume")).encode(),
        capture_output=True,
        env=claude.env(PYTHONIOENCODING="cp1252"),
        cwd=ROOT,
        timeout=60,
    )
    assert done.returncode == 0 and done.stderr == b""
    context = json.loads(done.stdout.decode("ascii"))["hookSpecificOutput"]["additionalContext"]
    assert "修复登录 bug 🙂" in context and "不要修改数据库" in context


def test_a_missing_or_forbidden_transcript_exits_0_silently_and_logs(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    done = claude.pre_compact()  # no transcript written
    assert (done.returncode, done.stdout) == (0, b"")
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text('{"type": "user", "message": {"role": "user", "content": "hi"}}\n')
    forbidden = claude.hook(
        "pre-compact", {"session_id": "s-1", "transcript_path": str(outside), "cwd": str(claude.project)}
    )
    assert (forbidden.returncode, forbidden.stdout) == (0, b"")
    other = claude.config / "projects" / "-another-project" / "s-1.jsonl"  # another project's session folder
    other.parent.mkdir(parents=True)
    other.write_text('{"type": "user", "message": {"role": "user", "content": "secret plans"}}\n')
    assert (
        claude.hook(
            "pre-compact", {"session_id": "s-1", "transcript_path": str(other), "cwd": str(claude.project)}
        ).stdout
        == b""
    )
    log = claude.logged()
    assert "is not a file" in log and log.count("outside the allowed roots") == 2
    assert claude.session_start() == ""  # nothing recorded: nothing injected


@NEEDS_DATA
def test_a_locked_or_corrupt_database_exits_0_silently_and_logs(tmp_path: Path) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / "short.jsonl")
    assert claude.pre_compact().returncode == 0
    claude.append(user("one more prompt", at="2026-12-01T00:00:00Z"))
    holder = sqlite3.connect(claude.db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        done = claude.pre_compact(wait=False, CTXKEEP_BUSY_TIMEOUT_MS="100")
        started = claude.hook(
            "session-start", claude.base("SessionStart", source="resume"), CTXKEEP_BUSY_TIMEOUT_MS="100"
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (done.returncode, done.stdout, started.returncode, started.stdout) == (0, b"", 0, b"")
    assert "locked" in claude.wait_for_log("session-start failed")
    claude.wait_for_log("Claude Code worker", nth=2)  # the worker the locked pre-compact started is done
    claude.db.write_bytes(b"this is not a database" * 100)
    for file in claude.db.parent.glob("ctxkeep.db-*"):
        file.unlink()
    broken = claude.pre_compact(wait=False)
    assert (broken.returncode, broken.stdout) == (0, b"")
    claude.wait_for_log("pre-compact failed", "not a valid ctxkeep database")


@NEEDS_DATA
def test_a_worker_started_while_the_database_is_locked_still_gets_its_input(tmp_path: Path) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / "short.jsonl")
    claude.prompt("Summarize the short session")  # the database exists, the transcript is not ingested yet
    holder = sqlite3.connect(claude.db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        done = claude.pre_compact(wait=False, CTXKEEP_BUSY_TIMEOUT_MS="100")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (done.returncode, done.stdout) == (0, b"")
    worker = claude.wait_for_log("Claude Code worker")
    assert "not JSON" not in worker and "worker ok" in worker, worker  # its input, then the file once free


def test_session_start_stays_under_9000_printed_characters_for_a_huge_task_and_says_what_did_not_fit(
    tmp_path: Path,
) -> None:
    claude = Claude(tmp_path)
    big = {
        "goal": "迁移计费服务 " + "谨慎 " * 300,
        "constraints": [f"约束 {i}: " + "保持 🙂 " * 40 for i in range(12)],
        "pending": [f"Pending item {i} " + "detail " * 60 for i in range(40)],
    }
    claude.save_task("big", big, bind=True)
    done = claude.hook("session-start", claude.base("SessionStart", source="resume"))
    assert len(done.stdout.decode("ascii").rstrip("\n")) <= MAX_CHARS  # measured on the bytes printed, escapes included
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "迁移计费服务" in context and "did not fit" in context and 'checkpoint_load(task_id="big")' in context


def test_session_start_names_a_task_to_load_only_once_it_has_a_checkpoint(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.prompt("Migrate the billing tables")
    context = claude.session_start("resume")
    assert "Migrate the billing tables" in context and "evidence_search(query)" in context
    assert "checkpoint_load" not in context  # cc-s-1 has no checkpoint yet: loading it would fail
    claude.save_task("cc-s-1", {"goal": "Migrate the billing tables"}, bind=True)
    claude.prompt("then drop the old views")
    assert 'checkpoint_load(task_id="cc-s-1")' in claude.session_start("resume")


def test_claude_code_and_codex_inject_the_same_view_of_the_same_records(tmp_path: Path) -> None:
    from tests.client_home import Agent

    prompt, (tool, given, response) = (
        "Port the parser to the new tokenizer; never use regex",
        bash("pytest -q", "3 failed"),
    )
    claude = Claude(tmp_path / "claude")
    claude.prompt(prompt)
    claude.post_tool_use(tool, given, response)
    codex = Agent(tmp_path / "codex")
    codex.hook("codex", "UserPromptSubmit", codex.base(prompt=prompt))
    codex.hook("codex", "PostToolUse", codex.base(tool_name=tool, tool_input=given, tool_response="3 failed"))
    out = codex.output(codex.hook("codex", "SessionStart", codex.base(source="resume")))
    assert out is not None and "never use regex" in out["hookSpecificOutput"]["additionalContext"]
    assert claude.session_start("resume") == out["hookSpecificOutput"]["additionalContext"]


def test_the_hook_log_is_private(tmp_path: Path) -> None:
    import stat

    claude = Claude(tmp_path)
    assert claude.hook("pre-compact", "garbage").returncode == 0
    assert stat.S_IMODE(claude.log.stat().st_mode) == 0o600
    assert "garbage" not in claude.logged()  # what failed, not the input it was given


def test_a_summary_seen_only_at_post_compact_is_repaired_by_the_next_hook_that_can_add_context(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.prompt("Migrate the billing tables")
    claude.prompt("never drop the legacy_invoices table")
    summary = "<analysis>…</analysis><summary>We are migrating the billing tables; all tasks are complete.</summary>"
    done = claude.hook("post-compact", claude.base("PostCompact", trigger="auto", compact_summary=summary))
    assert (done.returncode, done.stdout) == (0, b"")  # PostCompact cannot add context
    out = claude.output(claude.hook("user-prompt-submit", claude.base("UserPromptSubmit", prompt="go on")))
    assert out is not None and out["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "never drop the legacy_invoices table" in out["hookSpecificOutput"]["additionalContext"]
    assert (
        claude.output(claude.hook("user-prompt-submit", claude.base("UserPromptSubmit", prompt="and?"))) is None
    )  # once
    kept = claude.rows("SELECT summary FROM task_digests WHERE task_id = 'cc-s-1'")[0][0]
    assert "We are migrating the billing tables" in kept and "summary_negation_lost" in kept


def test_after_a_records_view_at_compaction_post_compact_adds_only_unverified_claims(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.prompt("Migrate the billing tables")
    claude.prompt("never drop the legacy_invoices table")
    claude.post_tool_use(
        "Edit", {"file_path": "/p/migrate.py", "old_string": "a", "new_string": "b"}, {"filePath": "/p/migrate.py"}
    )
    assert "never drop the legacy_invoices table" in claude.session_start("compact")  # no summary visible yet: the view
    summary = "<summary>Billing tables migrated. All tasks are complete.</summary>"
    claude.hook("post-compact", claude.base("PostCompact", trigger="auto", compact_summary=summary))
    name, data, response = (
        "Grep",
        {"pattern": "x"},
        {"mode": "files_with_matches", "filenames": ["a.py"], "numFiles": 1},
    )
    out = claude.post_tool_use(name, data, response, use_id="toolu_9")
    assert out is not None
    context = out["hookSpecificOutput"]["additionalContext"]
    assert "All tasks are complete" in context and "never drop" not in context  # the view already said the rule


@NEEDS_DATA
def test_resume_with_no_task_named_picks_this_sessions_task_never_anothers(tmp_path: Path) -> None:
    import anyio

    from ctxkeep.errors import NotFound
    from ctxkeep.settings import Settings
    from ctxkeep.tools.checkpoint import active_task
    from ctxkeep.tools.scope import open_scope

    claude = Claude(tmp_path, TRANSCRIPTS / "short.jsonl")
    assert claude.pre_compact().returncode == 0  # session s-1 gets cc-s-1
    other = Claude(tmp_path / "other-home", session="s-2")
    other.project, other.db = claude.project, claude.db

    async def pick(session: str) -> str:
        async with open_scope(Settings.from_env(claude.env(CLAUDE_CODE_SESSION_ID=session))) as scope:
            try:
                return await active_task(scope)
            except NotFound as exc:
                return f"NotFound: {exc}"

    assert anyio.run(pick, "s-1") == "cc-s-1"
    assert anyio.run(pick, "s-2").startswith("NotFound: this session (s-2) has no task yet")
