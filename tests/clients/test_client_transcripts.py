"""The transcript readers of Codex CLI (rollout JSONL) and Gemini CLI (chat JSONL): the same records the live hooks
make, the compaction summaries, the task the agent saved; unknown and broken lines skipped, never a crash; and the
detached worker that turns a transcript into the session's checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest

from ctxkeep.clients.codex.rollout import last_summary, read_rollout
from ctxkeep.clients.gemini.chat import read_chat
from ctxkeep.settings import Settings
from ctxkeep.tools.checkpoint import checkpoint_load
from ctxkeep.tools.scope import open_scope
from tests.client_home import FIXTURES, Agent


def _lines(name: str) -> list[str]:
    return (FIXTURES / name).read_text().splitlines()


def test_a_codex_rollout_gives_the_records_the_live_hooks_give_under_the_same_keys() -> None:
    reading = read_rollout(_lines("codex-rollout-exec.jsonl"))
    ran = [(r.key, r.text) for r in reading.records if r.kind == "ran"]
    assert ran == [("call_1_0", "echo hi; seq 3; ls /nonexistent")]  # the key PostToolUse's tool_use_id gives
    assert [(r.kind, r.status) for r in reading.records if r.kind == "error"] == [("error", "open")]  # exit code 2
    assert [r.text for r in reading.records if r.kind == "prompt"] == ["go"]
    assert reading.skipped == 0 and reading.lines == len(_lines("codex-rollout-exec.jsonl"))


def test_a_codex_rollout_holds_its_compaction_summary_and_the_last_one_is_found_from_the_end(tmp_path: Path) -> None:
    reading = read_rollout(_lines("codex-rollout-compacted.jsonl"))
    assert reading.summaries == ["SUMMARY_MARKER: the user asked to call probe_echo; it returned STRUCT_MARKER."]
    big = tmp_path / "rollout.jsonl"
    later = json.dumps(
        {
            "timestamp": "2026-12-01T09:00:00.000Z",
            "type": "compacted",
            "payload": {
                "message": "Another language "
                "model started to solve this problem and produced a summary.\nSECOND SUMMARY"
            },
        },
        separators=(",", ":"),
    )
    filler = "\n".join(
        json.dumps(
            {"type": "event_msg", "payload": {"type": "token_count", "n": n, "pad": "x" * 200}}, separators=(",", ":")
        )
        for n in range(20_000)
    )  # ~5 MB after it, as Codex writes JSON
    big.write_text((FIXTURES / "codex-rollout-compacted.jsonl").read_text() + later + "\n" + filler + "\n")
    assert last_summary(str(big)) == "SECOND SUMMARY"


def test_a_codex_mcp_call_to_ctxkeeps_checkpoint_save_binds_the_task_and_patches_count_as_edits() -> None:
    save = {
        "type": "event_msg",
        "timestamp": "2026-12-01T09:00:01.000Z",
        "payload": {
            "type": "item_completed",
            "item": {
                "type": "McpToolCall",
                "id": "call_9",
                "server": "ctxkeep",
                "tool": "checkpoint_save",
                "arguments": {"task_id": "proc"},
                "status": "completed",
                "result": {"content": [{"type": "text", "text": "saved proc v1"}], "isError": False},
            },
        },
    }
    patch = {
        "type": "event_msg",
        "timestamp": "2026-12-01T09:00:02.000Z",
        "payload": {
            "type": "item_completed",
            "item": {
                "type": "FileChange",
                "id": "call_10",
                "status": "completed",
                "changes": [{"path": "/p/src/a.py", "kind": "update"}],
            },
        },
    }
    reading = read_rollout([json.dumps(save), json.dumps(patch)])
    assert reading.bound_task == "proc" and [r.key for r in reading.records if r.kind == "edit"] == ["/p/src/a.py"]


@pytest.mark.parametrize("reader", [read_rollout, lambda lines: read_chat(lines, "/p")], ids=["codex", "gemini"])
def test_broken_and_unknown_lines_are_skipped_and_counted_never_a_crash(reader: object) -> None:
    lines = [
        "not json",
        "[1, 2]",
        '{"type": "event_msg", "payload": 7}',
        '{"type": "event_msg", "payload": {"type": "item_completed", '
        '"item": {"type": "CommandExecution", "command": {"odd": 1}, "exit_code": "x"}}}',
        '{"id": 5, "type": "user"}',
        '{"$set": {"messages": "nope"}}',
        '{"id": "m1", "type": "gemini", "content": 5, "toolCalls": [{"name": 3}, 7]}',
        '{"timestamp": "2026-12-01T09:00:00.000Z", "type": "compacted", "payload": {"message": 12}}',
        '{"half": "writ',
    ]
    reading = reader(lines)  # type: ignore[operator]
    assert reading.lines == len(lines) and reading.skipped >= 3


def test_a_gemini_chat_file_gives_each_prompt_once_and_the_compression_summary() -> None:
    reading = read_chat(_lines("gemini-chat-compressed.jsonl"), "/p")
    assert [r.text for r in reading.records if r.kind == "prompt"] == ["please call probe_echo", "second prompt"]
    assert reading.summaries == ["GEMINI_SUMMARY_MARKER: user asked for probe_echo; it returned."]


def test_a_gemini_tool_call_in_the_chat_file_gives_the_live_hooks_records() -> None:
    message = {
        "id": "g1",
        "timestamp": "2026-12-01T09:00:00.000Z",
        "type": "gemini",
        "content": "",
        "toolCalls": [
            {
                "id": "c1",
                "name": "write_file",
                "args": {"file_path": "a.txt", "content": "x"},
                "status": "success",
                "result": [{"functionResponse": {"response": {"output": "Successfully created a.txt"}}}],
            },
            {
                "id": "c2",
                "name": "mcp_ctxkeep_checkpoint_save",
                "args": {"task_id": "proc"},
                "status": "success",
                "result": [],
            },
            {
                "id": "c3",
                "name": "run_shell_command",
                "args": {"command": "pytest"},
                "status": "success",
                "result": [{"functionResponse": {"response": {"output": "Output: 2 failed\nExit Code: 1"}}}],
            },
        ],
    }
    reading = read_chat([json.dumps(message)], "/p")
    assert [r.key for r in reading.records if r.kind == "edit"] == ["/p/a.txt"] and reading.bound_task == "proc"
    assert [r.status for r in reading.records if r.kind == "check"] == ["failed"]


async def _load(agent: Agent, task_id: str) -> object:
    settings = Settings.from_env(
        {"CTXKEEP_DB": str(agent.db), "CTXKEEP_PROJECT": str(agent.project), "HOME": str(agent.home)}
    )
    async with open_scope(settings) as scope:
        return await checkpoint_load(scope, task_id)


@pytest.mark.slow
def test_codex_pre_compact_starts_the_worker_that_saves_the_session_task_from_the_rollout(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    rollout = agent.codex_rollout("codex-rollout-exec.jsonl")
    agent.hook("codex", "UserPromptSubmit", agent.base(prompt="Find why ls fails. Never delete files."))
    agent.hook("codex", "PreCompact", agent.base(trigger="auto", transcript_path=str(rollout)))
    assert "bound to codex-s-1" in agent.wait_for_log("Codex worker ok")
    loaded = anyio.run(_load, agent, "codex-s-1")
    state = loaded.state  # type: ignore[attr-defined]
    assert state.goal == "go" and state.constraints == ["Find why ls fails. Never delete files."]  # rollout + live hook
    assert any("echo hi" in q for q in state.open_questions)  # the command that failed (exit code 2)
    resumed = agent.output(agent.hook("codex", "SessionStart", agent.base(source="resume")))
    assert (
        resumed is not None
        and 'checkpoint_load(task_id="codex-s-1")' in resumed["hookSpecificOutput"]["additionalContext"]
    )
    again = agent.hook("codex", "PreCompact", agent.base(trigger="auto", transcript_path=str(rollout)))
    assert again.returncode == 0 and "rollout unchanged since the last ingest" in agent.logged()


@pytest.mark.slow
def test_gemini_session_end_starts_the_worker_that_saves_the_session_task_from_the_chat_file(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    chat = agent.gemini_chat("gemini-chat-compressed.jsonl")
    agent.hook("gemini", "SessionEnd", agent.base(reason="exit", transcript_path=str(chat)))
    agent.wait_for_log("Gemini CLI worker ok")  # the worker logs once it is done
    loaded = anyio.run(_load, agent, "gemini-s-1")
    assert loaded.state.goal == "please call probe_echo"  # type: ignore[attr-defined]
