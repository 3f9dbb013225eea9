"""The Claude Code hooks on real transcripts, as Claude Code runs them: a subprocess, JSON on stdin, exit 0 always."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.settings import Settings
from ctxkeep.storage import SessionRow
from ctxkeep.tools.checkpoint.versions import checkpoint_save
from ctxkeep.tools.scope import open_scope

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent
TRANSCRIPTS = ROOT.parent / "shared" / "data" / "claude-code-transcripts"
NEEDS_DATA = pytest.mark.skipif(not TRANSCRIPTS.is_dir(), reason="../shared/data/claude-code-transcripts is absent")
MAX_CHARS = 9_000


class Claude:
    """A fake Claude Code home: a transcript under ~/.claude/projects, the hooks run as subprocesses."""

    def __init__(self, tmp: Path, transcript: Path | None = None) -> None:
        self.home, self.project, self.db = tmp / "home", tmp / "project", tmp / "data" / "ctxkeep.db"
        self.project.mkdir(parents=True)
        self.transcript = self.home / ".claude" / "projects" / "-project" / "session.jsonl"
        self.transcript.parent.mkdir(parents=True)
        if transcript is not None:
            shutil.copy(transcript, self.transcript)
        self.log = self.db.parent / "ctxkeep-hooks.log"

    def env(self, **extra: str) -> dict[str, str]:
        return {"HOME": str(self.home), "PATH": os.environ.get("PATH", ""), "CTXKEEP_DB": str(self.db),
                "CLAUDE_PROJECT_DIR": str(self.project), **extra}

    def hook(self, name: str, stdin: str | dict[str, Any], **extra: str) -> subprocess.CompletedProcess[str]:
        text = stdin if isinstance(stdin, str) else json.dumps(stdin)
        return subprocess.run([sys.executable, "-m", "ctxkeep", "hook", name], input=text, capture_output=True, text=True,
                              env=self.env(**extra), cwd=ROOT, timeout=120)

    def pre_compact(self, **extra: str) -> subprocess.CompletedProcess[str]:
        return self.hook("pre-compact", {"session_id": "s-1", "transcript_path": str(self.transcript), "cwd": str(self.project),
                                         "hook_event_name": "PreCompact", "trigger": "auto"}, **extra)

    def session_start(self, session_id: str = "s-1") -> str:
        done = self.hook("session-start", {"session_id": session_id, "cwd": str(self.project), "hook_event_name": "SessionStart", "source": "compact"})
        assert done.returncode == 0 and done.stderr == ""
        if not done.stdout:
            return ""
        assert len(done.stdout.rstrip("\n")) <= MAX_CHARS
        output = json.loads(done.stdout)
        assert output["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        return str(output["hookSpecificOutput"]["additionalContext"])

    def append(self, *records: dict[str, Any]) -> None:
        with self.transcript.open("a", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record) + "\n")

    def save_task(self, task_id: str, state: dict[str, Any], bind: bool = False) -> None:
        """Save a task in this project as an agent would (and, with `bind`, bind session s-1 to it as pre-compact does)."""
        async def save() -> None:
            async with open_scope(Settings.from_env(self.env())) as scope:
                await checkpoint_save(scope, CheckpointSaveRequest(task_id=task_id, state=TaskState(**state)))
                if bind:
                    async with scope.store.transaction() as tx:
                        await tx.sessions.put(scope.project, SessionRow("s-1", task_id, True, "/x.jsonl", "", "2026-11-30T00:00:00Z"))

        anyio.run(save)

    def rows(self, sql: str) -> list[Any]:
        with sqlite3.connect(self.db) as conn:
            return conn.execute(sql).fetchall()


def tool_use(name: str, data: dict[str, Any], use_id: str) -> dict[str, Any]:
    return {"type": "assistant", "sessionId": "s-1", "message": {"role": "assistant", "id": f"msg_{use_id}",
            "content": [{"type": "tool_use", "id": use_id, "name": name, "input": data}]}}


def tool_result(use_id: str, text: str) -> dict[str, Any]:
    return {"type": "user", "sessionId": "s-1", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use_id, "content": text}]}}


def first_prompt(path: Path) -> str:
    """The session's first typed prompt, read independently of ctxkeep: the first user record with string content."""
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        content = record.get("message", {}).get("content") if record.get("type") == "user" else None
        if isinstance(content, str) and not record.get("isMeta"):
            args = re.search(r"<command-args>(.*?)</command-args>", content, re.DOTALL)
            return " ".join((args.group(1) if args else content).split())
    raise AssertionError(f"{path.name} has no typed prompt")


@NEEDS_DATA
@pytest.mark.parametrize("name", sorted(p.name for p in TRANSCRIPTS.glob("*.jsonl")) if TRANSCRIPTS.is_dir() else [])
def test_pre_compact_then_session_start_carries_the_goal(tmp_path: Path, name: str) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / name)
    done = claude.pre_compact()
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    context = claude.session_start()
    assert first_prompt(claude.transcript)[:60] in " ".join(context.split())
    assert "checkpoint_load(task_id=\"cc-s-1\")" in context
    assert claude.rows("SELECT task_id, trigger FROM checkpoints") == [("cc-s-1", "pre_compact")]

    evidence = claude.rows("SELECT count(*) FROM evidence")
    again = claude.pre_compact()
    assert again.returncode == 0 and again.stdout == ""
    assert claude.rows("SELECT count(*) FROM evidence") == evidence  # nothing new was ingested
    assert "nothing new" in claude.log.read_text().splitlines()[-1]


@NEEDS_DATA
def test_the_latest_todo_list_becomes_pending_and_completed_and_each_version_verifies(tmp_path: Path) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / "tool_heavy.jsonl")
    claude.append(tool_use("TodoWrite", {"todos": [
        {"content": "Find why scrollback fails", "status": "completed", "activeForm": "Finding"},
        {"content": "Patch the xterm.js wheel handler", "status": "in_progress", "activeForm": "Patching"},
        {"content": "Write a regression test", "status": "pending", "activeForm": "Writing"},
        {"content": "Update the changelog", "status": "pending", "activeForm": "Updating"}]}, "toolu_todo1"),
        tool_result("toolu_todo1", "Todos have been modified successfully"))
    assert claude.pre_compact().returncode == 0
    context = claude.session_start()
    for item in ("Patch the xterm.js wheel handler", "Write a regression test", "Update the changelog", "Find why scrollback fails"):
        assert item in context
    assert "Continue: Patch the xterm.js wheel handler" in context
    pending = context[context.index("## Pending"):context.index("## Completed")]
    assert "Find why scrollback fails" not in pending

    claude.append(tool_use("TodoWrite", {"todos": [
        {"content": "Find why scrollback fails", "status": "completed", "activeForm": "Finding"},
        {"content": "Patch the xterm.js wheel handler", "status": "completed", "activeForm": "Patching"},
        {"content": "Write a regression test", "status": "in_progress", "activeForm": "Writing"}]}, "toolu_todo2"),
        tool_result("toolu_todo2", "Todos have been modified successfully"))
    assert claude.pre_compact().returncode == 0
    versions = claude.rows("SELECT version, violations_json, state_json FROM checkpoints ORDER BY version")
    assert [(v, violations) for v, violations, _ in versions] == [(1, "[]"), (2, "[]")]  # strict saves: nothing lost silently
    latest = json.loads(versions[-1][2])
    assert latest["pending"] == ["Write a regression test"]
    assert {"kind": "pending", "item": "Update the changelog", "reason": "no longer on the agent's todo list"} in latest["dropped"]
    assert "Continue: Write a regression test" in claude.session_start()


@NEEDS_DATA
def test_a_session_whose_agent_saved_a_task_is_bound_to_it(tmp_path: Path) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / "short.jsonl")
    state = {"goal": "Get mix phx.server to start on port 4001", "constraints": ["Do not touch the production config"],
             "pending": ["Find what holds port 4000"]}
    claude.save_task("phx-start", state)
    claude.append(tool_use("mcp__ctxkeep__checkpoint_save", {"task_id": "phx-start", "state": state}, "toolu_save1"),
                  tool_result("toolu_save1", "saved phx-start v1"))
    assert claude.pre_compact().returncode == 0
    context = claude.session_start()
    for text in ("# Task phx-start", state["goal"], "Do not touch the production config", "Find what holds port 4000"):
        assert text in context
    assert "mix phx.server doesnt seem to start" not in context.split("## History")[0]  # not the session's own goal
    assert [row[0] for row in claude.rows("SELECT DISTINCT task_id FROM checkpoints")] == ["phx-start"]
    assert claude.rows("SELECT task_id, bound FROM sessions") == [("phx-start", 1)]

    # later the agent's todo list finishes the pending item and adds one: the bound task gets a pre_compact version
    claude.append(tool_use("TodoWrite", {"todos": [{"content": "Find what holds port 4000", "status": "completed"},
                                                   {"content": "Kill the stale beam process", "status": "in_progress"}]}, "toolu_todo9"),
                  tool_result("toolu_todo9", "Todos have been modified successfully"))
    assert claude.pre_compact().returncode == 0
    versions = claude.rows("SELECT version, trigger, violations_json, state_json FROM checkpoints ORDER BY version")
    assert [(v, trigger, violations) for v, trigger, violations, _ in versions] == [(1, "manual", "[]"), (2, "pre_compact", "[]")]
    latest = json.loads(versions[-1][3])
    assert (latest["pending"], latest["completed"]) == (["Kill the stale beam process"], ["Find what holds port 4000"])
    assert latest["constraints"] == state["constraints"] and latest["goal"] == state["goal"]


@NEEDS_DATA
def test_another_session_never_gets_this_sessions_task(tmp_path: Path) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / "short.jsonl")
    assert claude.pre_compact().returncode == 0
    assert claude.session_start("s-1") != ""
    assert claude.session_start("another-session") == ""  # a second terminal, or a resume of a session never compacted


def test_the_output_is_ascii_json_whatever_the_terminal_encoding(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.save_task("cjk", {"goal": "修复登录 bug 🙂", "pending": ["不要修改数据库"]}, bind=True)
    done = subprocess.run([sys.executable, "-m", "ctxkeep", "hook", "session-start"], input=json.dumps({"session_id": "s-1", "cwd": str(claude.project)}).encode(),
                          capture_output=True, env=claude.env(PYTHONIOENCODING="cp1252"), cwd=ROOT, timeout=60)
    assert done.returncode == 0 and done.stderr == b""
    context = json.loads(done.stdout.decode("ascii"))["hookSpecificOutput"]["additionalContext"]
    assert "修复登录 bug 🙂" in context and "不要修改数据库" in context


@pytest.mark.parametrize("stdin", ["", "not json", "[]", '{"session_id": "../../etc"}', '{"session_id": "s-1", "transcript_path": 7}'])
def test_garbage_input_exits_0_silently_and_logs(tmp_path: Path, stdin: str) -> None:
    claude = Claude(tmp_path)
    for name in ("pre-compact", "session-start"):
        done = claude.hook(name, stdin)
        assert (done.returncode, done.stdout, done.stderr) == (0, "", "")
    lines = claude.log.read_text().splitlines()
    assert len(lines) == 2 and all(" failed: " in line for line in lines)


def test_a_missing_or_forbidden_transcript_exits_0_silently_and_logs(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    done = claude.pre_compact()  # no transcript written
    assert (done.returncode, done.stdout) == (0, "")
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_text('{"type": "user", "message": {"role": "user", "content": "hi"}}\n')
    forbidden = claude.hook("pre-compact", {"session_id": "s-1", "transcript_path": str(outside), "cwd": str(claude.project)})
    assert (forbidden.returncode, forbidden.stdout) == (0, "")
    log = claude.log.read_text()
    assert "is not a file" in log and "outside the allowed roots" in log
    assert claude.session_start() == ""  # no active task: nothing injected


@NEEDS_DATA
def test_a_locked_or_corrupt_database_exits_0_silently_and_logs(tmp_path: Path) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / "short.jsonl")
    assert claude.pre_compact().returncode == 0
    holder = sqlite3.connect(claude.db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        done = claude.pre_compact(CTXKEEP_BUSY_TIMEOUT_MS="100")
        started = claude.hook("session-start", {"session_id": "s-1", "cwd": str(claude.project)}, CTXKEEP_BUSY_TIMEOUT_MS="100")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert (done.returncode, done.stdout, started.returncode, started.stdout) == (0, "", 0, "")
    assert "locked" in claude.log.read_text()
    claude.db.write_bytes(b"this is not a database" * 100)
    for file in claude.db.parent.glob("ctxkeep.db-*"):
        file.unlink()
    broken = claude.pre_compact()
    assert (broken.returncode, broken.stdout) == (0, "")
    assert "not a valid ctxkeep database" in claude.log.read_text().splitlines()[-1]


@NEEDS_DATA
def test_hooks_import_neither_the_mcp_sdk_nor_tiktoken(tmp_path: Path) -> None:
    claude = Claude(tmp_path, TRANSCRIPTS / "short.jsonl")
    probe = ("import sys\nfrom ctxkeep.cli import main\nmain(['hook', sys.argv[1]])\n"
             "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'tiktoken'))\n"
             "print('HEAVY', heavy, file=sys.stderr)\n")
    for name, stdin in (("pre-compact", {"session_id": "s-1", "transcript_path": str(claude.transcript), "cwd": str(claude.project)}),
                        ("session-start", {"session_id": "s-1", "cwd": str(claude.project)})):
        done = subprocess.run([sys.executable, "-c", probe, name], input=json.dumps(stdin), capture_output=True, text=True,
                              env=claude.env(), cwd=ROOT, timeout=60)
        assert "HEAVY []" in done.stderr, done.stderr
    assert "injected task cc-s-1" in claude.log.read_text()


def test_session_start_stays_under_9000_characters_for_a_huge_task(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    big = {"goal": "Migrate the billing service " + "with care " * 300, "constraints": [f"Constraint {i}: " + "keep it " * 40 for i in range(12)],
           "pending": [f"Pending item {i} " + "detail " * 60 for i in range(40)], "decisions": [f"Decision {i} " + "because " * 80 for i in range(40)]}
    claude.save_task("big", big, bind=True)
    # the control rules alone exceed 9,000 characters: the goal and the instruction to load the rest, never a silent cut
    context = claude.session_start()
    assert "Migrate the billing service" in context and "call checkpoint_load before doing anything else" in context
    small = {**big, "pending": big["pending"][:3], "constraints": big["constraints"][:2]}
    claude.save_task("small", small, bind=True)
    context = claude.session_start()
    assert "Pending item 2" in context and "Constraint 1" in context and len(context) < MAX_CHARS


def test_the_hook_log_is_private(tmp_path: Path) -> None:
    import stat

    claude = Claude(tmp_path)
    assert claude.hook("pre-compact", "garbage").returncode == 0
    assert stat.S_IMODE(claude.log.stat().st_mode) == 0o600
    assert "garbage" not in claude.log.read_text()  # what failed, not the input it was given
