"""`ctxkeep hook <client> <event>` for Codex, Gemini, Cursor, VS Code, Windsurf and Cline, as each client runs it: the
records, the offload, the gate, the injection at session start and after a compaction; garbage in, exit 0 and a log
line, never a traceback or a broken answer."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.client_home import FIXTURES, Agent

pytestmark = pytest.mark.slow
BIG = (
    "\n".join(f"line {n}: building module_{n}.o ... ok" for n in range(3_000)) + "\nERROR: module_2999 failed to link\n"
)
PATCH = (
    "*** Begin Patch\n*** Update File: src/a.py\n@@\n-x = 1\n+x = 2\n*** Add File: src/b.py\n+y = 3\n*** End Patch\n"
)


def _context(out: dict[str, Any] | None, event: str) -> str:
    assert out is not None
    assert out["hookSpecificOutput"]["hookEventName"] == event
    return str(out["hookSpecificOutput"]["additionalContext"])


# Codex CLI


def test_codex_keeps_a_large_shell_output_in_place_but_offloads_and_records_it(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    done = agent.hook(
        "codex",
        "PostToolUse",
        agent.base(tool_name="Bash", tool_input={"command": "make"}, tool_response=BIG, tool_use_id="call_1"),
    )
    assert agent.output(done) is None  # Codex ignores replacements: nothing to print
    assert list(agent.inbox().values()) == [BIG]
    assert agent.records("ran") == [("call_1", "make", "")]
    assert "kept in the context" in agent.logged()


def test_codex_blocks_a_stop_after_a_patch_once_and_names_the_files(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    agent.hook("codex", "UserPromptSubmit", agent.base(prompt="Fix the login bug."))
    agent.hook(
        "codex",
        "PostToolUse",
        agent.base(tool_name="apply_patch", tool_input={"command": PATCH}, tool_response="Done", tool_use_id="call_2"),
    )
    assert [key for key, _, _ in agent.records("edit")] == [
        str(agent.project / "src/a.py"),
        str(agent.project / "src/b.py"),
    ]
    blocked = agent.output(
        agent.hook("codex", "Stop", agent.base(stop_hook_active=False, last_assistant_message="Done."))
    )
    assert blocked is not None and blocked["decision"] == "block" and "a.py, b.py" in blocked["reason"]
    assert agent.output(agent.hook("codex", "Stop", agent.base(stop_hook_active=True))) is None
    assert agent.output(agent.hook("codex", "Stop", agent.base(stop_hook_active=False))) is None  # once per change


def test_codex_session_start_after_compaction_repairs_what_the_rollouts_summary_left_out(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    rollout = agent.codex_rollout("codex-rollout-compacted.jsonl")
    agent.hook("codex", "UserPromptSubmit", agent.base(prompt="Call probe_echo. Never push to main."))
    out = agent.output(agent.hook("codex", "SessionStart", agent.base(source="compact", transcript_path=str(rollout))))
    text = _context(out, "SessionStart")
    assert text.startswith("ctxkeep checked the compaction summary") and "Never push to main" in text
    kept = agent.rows("SELECT task_id, summary, source FROM task_digests")
    assert kept and kept[0][0] == "codex-s-1" and "SUMMARY_MARKER" in kept[0][1] and kept[0][2] == "client compaction"


def test_codex_reads_no_rollout_outside_its_sessions_folder_or_of_another_session(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    agent.hook("codex", "UserPromptSubmit", agent.base(prompt="Never push to main."))
    elsewhere = tmp_path / "rollout-s-1.jsonl"
    elsewhere.write_bytes((FIXTURES / "codex-rollout-compacted.jsonl").read_bytes())
    other = Agent(tmp_path / "other", session="s-2").codex_rollout("codex-rollout-compacted.jsonl")
    for path in (elsewhere, other):
        text = _context(
            agent.output(agent.hook("codex", "SessionStart", agent.base(source="compact", transcript_path=str(path)))),
            "SessionStart",
        )
        assert text.startswith("ctxkeep restored this session's records")  # no summary read: the records' own view
    agent.hook("codex", "PreCompact", agent.base(trigger="auto", transcript_path=str(elsewhere)))
    assert "PreCompact failed" in agent.logged() and "names no rollout" in agent.logged()


def test_codex_resume_injects_the_records_view_within_its_limit_and_a_new_or_cleared_session_gets_nothing(
    tmp_path: Path,
) -> None:
    agent = Agent(tmp_path)
    assert agent.output(agent.hook("codex", "SessionStart", agent.base(source="startup"))) is None
    for n in range(300):
        agent.hook(
            "codex", "UserPromptSubmit", agent.base(prompt=f"Step {n}: never touch the vendored library number {n}.")
        )
    assert (
        agent.output(agent.hook("codex", "SessionStart", agent.base(source="clear"))) is None
    )  # a fresh context asked for
    assert agent.output(agent.hook("gemini", "SessionStart", agent.base(source="clear"))) is None
    done = agent.hook("codex", "SessionStart", agent.base(source="resume"))
    text = _context(agent.output(done), "SessionStart")
    assert len(done.stdout) <= 9_000 and "Step 0:" in text and "did not fit" in text
    assert "checkpoint_load" not in text and "evidence_search(query)" in text  # no task saved yet: none named


def _earlier_session_with_open_work(tmp_path: Path, client: str) -> Agent:
    """Session s-1 of `client`: 12 long prompts, each with a rule (`<` and `>` in it), and an edit not committed
    since: more than the brief's 2,000 characters."""
    earlier = Agent(tmp_path, session="s-1")
    prompt = "UserPromptSubmit" if client == "codex" else "BeforeAgent"
    for n in range(12):
        rule = f"Step {n}: never put <script> or <iframe> tags in page {n}; " + "<b>keep</b> the markup as it is. " * 6
        earlier.hook(client, prompt, earlier.base(prompt=rule))
    if client == "codex":
        edit = {"tool_name": "apply_patch", "tool_input": {"command": PATCH}, "tool_response": "Done"}
        earlier.hook(client, "PostToolUse", earlier.base(tool_use_id="call_1", **edit))
    else:
        written = {"llmContent": "Created", "returnDisplay": {"filePath": str(earlier.project / "a.txt")}}
        edit = {"tool_name": "write_file", "tool_input": {"file_path": "a.txt", "content": "x"}}
        earlier.hook(client, "AfterTool", earlier.base(tool_response=written, **edit))
    return earlier


@pytest.mark.parametrize("client", ["codex", "gemini"])
def test_a_new_session_starts_with_the_brief_of_the_open_work_an_earlier_session_left(
    tmp_path: Path, client: str
) -> None:
    earlier = _earlier_session_with_open_work(tmp_path, client)
    new = Agent(tmp_path, session="s-2")
    done = new.hook(client, "SessionStart", new.base(source="startup"))
    text = _context(new.output(done), "SessionStart")
    script = "Step 0: never put \u2039script\u203a" if client == "gemini" else "Step 0: never put <script>"
    assert text.startswith("ctxkeep: this project's earlier work") and script in text
    assert ("a.py" if client == "codex" else "a.txt") in text  # the state then: edited, not committed
    assert len(done.stdout) <= 2_000 and len(json.dumps(text)) <= 2_000
    off = new.hook(client, "SessionStart", new.base(source="startup"), CTXKEEP_START_BRIEF="off")
    assert new.output(off) is None and "off (CTXKEEP_START_BRIEF)" in earlier.logged()


# Gemini CLI


def test_gemini_records_the_prompt_without_the_context_it_prefixed(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    agent.hook(
        "gemini",
        "BeforeAgent",
        agent.base(prompt="<hook_context>ctxkeep restored …</hook_context>\n\nFix the login bug."),
    )
    assert [text for _, text, _ in agent.records("prompt")] == ["Fix the login bug."]


def test_gemini_edits_are_recorded_as_absolute_paths_a_read_verifies_them_and_after_agent_denies_once(
    tmp_path: Path,
) -> None:
    agent = Agent(tmp_path)
    written = agent.base(
        tool_name="write_file",
        tool_input={"file_path": "a.txt", "content": "x\n"},
        tool_response={
            "llmContent": "Successfully created a.txt",
            "returnDisplay": {"filePath": str(agent.project / "a.txt")},
        },
    )
    agent.hook("gemini", "AfterTool", written)
    assert [key for key, _, _ in agent.records("edit")] == [str(agent.project / "a.txt")]
    denied = agent.output(
        agent.hook("gemini", "AfterAgent", agent.base(prompt="p", prompt_response="Done", stop_hook_active=False))
    )
    assert denied is not None and denied["decision"] == "deny" and "a.txt" in denied["reason"]
    agent.hook("gemini", "AfterTool", written)
    agent.hook(
        "gemini",
        "AfterTool",
        agent.base(
            tool_name="read_file",
            tool_input={"file_path": "a.txt"},
            tool_response={"llmContent": "x\n", "returnDisplay": ""},
        ),
    )
    assert (
        agent.output(agent.hook("gemini", "AfterAgent", agent.base(stop_hook_active=False))) is None
    )  # read back: verified


def test_gemini_shell_exit_codes_decide_a_check_and_mcp_tools_get_their_server_name(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    failed = "<untrusted_context>\nOutput: 1 failed\nExit Code: 1\nProcess Group PGID: 7\n</untrusted_context>"
    agent.hook(
        "gemini",
        "AfterTool",
        agent.base(
            tool_name="run_shell_command",
            tool_input={"command": "pytest -q"},
            tool_response={"llmContent": failed, "returnDisplay": "1 failed"},
        ),
    )
    assert [status for _, _, status in agent.records("check")] == ["failed"]
    sample = json.loads((FIXTURES / "gemini-AfterTool.json").read_text()) | agent.base()
    agent.hook("gemini", "AfterTool", sample | {"tool_response": {"llmContent": BIG}})
    assert agent.rows("SELECT source FROM evidence_inbox") == [
        ("mcp__probe__probe_echo",)
    ]  # shaped as another server's tool


def test_gemini_repairs_a_compression_once_on_the_next_hook_that_can_add_context(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    chat = agent.gemini_chat()
    data = agent.base(transcript_path=str(chat))
    assert (
        agent.output(agent.hook("gemini", "BeforeAgent", data | {"prompt": "Call probe_echo. Never push to main."}))
        is None
    )
    chat.write_bytes((FIXTURES / "gemini-chat-compressed.jsonl").read_bytes())  # Gemini compressed the history
    out = agent.output(
        agent.hook(
            "gemini",
            "AfterTool",
            data | {"tool_name": "read_file", "tool_input": {"file_path": "x"}, "tool_response": {"llmContent": "x"}},
        )
    )
    text = _context(out, "AfterTool")
    assert text.startswith("ctxkeep checked the compaction summary") and "Never push to main" in text
    assert agent.output(agent.hook("gemini", "BeforeAgent", data | {"prompt": "go on"})) is None  # repaired once
    with chat.open("ab") as more:
        more.write((FIXTURES / "gemini-chat-compressed.jsonl").read_bytes()[-3000:])  # the same snapshot again
    assert agent.output(agent.hook("gemini", "BeforeAgent", data | {"prompt": "next"})) is None


def test_gemini_gets_text_it_will_not_escape_within_its_limit(tmp_path: Path) -> None:
    """Gemini 0.61 HTML-escapes `<` and `>` inside <hook_context> (its model then reads `&gt;`): ctxkeep's text for
    Gemini has neither: the quote marker is `›`, arrows are arrows, the rules' own angle brackets `‹ ›`."""
    agent = Agent(tmp_path)
    for n in range(200):
        agent.hook(
            "gemini", "BeforeAgent", agent.base(prompt=f"Never use <script> or <iframe> tags in template {n} <<>> ->.")
        )
    done = agent.hook("gemini", "SessionStart", agent.base(source="resume"))
    text = _context(agent.output(done), "SessionStart")
    assert "<" not in text and ">" not in text and "&gt;" not in text and "&lt;" not in text
    assert "\n\u203a Never use \u2039script\u203a or \u2039iframe\u203a tags in template" in text  # quoted, readable
    assert "\u2039\u2039\u203a\u203a \u2192." in text
    assert 8_000 < len(done.stdout) <= 9_000


# Cursor, VS Code, Windsurf, Cline


def test_cursor_stop_asks_for_a_check_once_and_a_follow_up_stop_is_never_blocked(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    base = {"conversation_id": "s-1", "generation_id": "g-1", "workspace_roots": [str(agent.project)]}
    assert agent.output(agent.hook("cursor", "beforeSubmitPrompt", base | {"prompt": "Fix it."})) == {"continue": True}
    agent.hook(
        "cursor",
        "afterFileEdit",
        base | {"file_path": "src/main.ts", "edits": [{"old_string": "a", "new_string": "b"}]},
    )
    assert agent.output(agent.hook("cursor", "stop", base | {"status": "completed", "loop_count": 1})) is None
    agent.hook("cursor", "afterFileEdit", base | {"file_path": "src/other.ts", "edits": []})
    out = agent.output(agent.hook("cursor", "stop", base | {"status": "completed", "loop_count": 0}))
    assert out is not None and "other.ts" in out["followup_message"]
    assert agent.output(agent.hook("cursor", "sessionStart", base | {"session_id": "s-1"}))[
        "additional_context"
    ].startswith("ctxkeep restored")  # type: ignore[index]


def test_vscode_stop_blocks_in_its_own_shape_and_terminal_commands_count_as_checks(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    base = {"sessionId": "s-1", "cwd": str(agent.project), "hookEventName": "PostToolUse"}
    agent.hook(
        "vscode",
        "PostToolUse",
        base
        | {
            "tool_name": "create_file",
            "tool_input": {"filePath": "app.py", "content": "x"},
            "tool_response": "created",
            "tool_use_id": "t1",
        },
    )
    out = agent.output(agent.hook("vscode", "Stop", base | {"stop_hook_active": False}))
    assert out == {
        "hookSpecificOutput": {
            "hookEventName": "Stop",
            "decision": "block",
            "reason": out["hookSpecificOutput"]["reason"],
        }
    }  # type: ignore[index]
    agent.hook(
        "vscode",
        "PostToolUse",
        base
        | {
            "tool_name": "run_in_terminal",
            "tool_input": {"command": "pytest"},
            "tool_response": "3 passed",
            "tool_use_id": "t2",
        },
    )
    assert agent.records("check") == [("test:pytest", "pytest", "passed")]


def test_windsurf_hooks_record_and_print_nothing(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    base = {"trajectory_id": "s-1", "execution_id": "e-1", "agent_action_name": "x"}
    assert (
        agent.output(agent.hook("windsurf", "pre_user_prompt", base | {"tool_info": {"user_prompt": "Never push."}}))
        is None
    )
    agent.hook(
        "windsurf", "post_write_code", base | {"tool_info": {"file_path": str(agent.project / "a.py"), "edits": []}}
    )
    agent.hook(
        "windsurf",
        "post_run_command",
        base | {"tool_info": {"command_line": "git commit -m x", "cwd": str(agent.project)}},
    )
    assert [text for _, text, _ in agent.records("prompt")] == ["Never push."]
    assert [key for key, _, _ in agent.records("edit")] == [str(agent.project / "a.py")] and agent.records("vcs")


def test_cline_resume_gives_back_the_records_and_every_answer_is_one_cline_accepts(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    base = {"taskId": "s-1", "clineVersion": "3.36", "workspaceRoots": [str(agent.project)]}
    assert agent.output(
        agent.hook("cline", "TaskStart", base | {"taskStart": {"task": "Port the parser. Never use regex."}})
    ) == {"cancel": False}
    agent.hook(
        "cline",
        "PostToolUse",
        base
        | {
            "postToolUse": {
                "toolName": "write_to_file",
                "parameters": {"path": "p.py"},
                "result": "ok",
                "success": True,
            }
        },
    )
    assert [key for key, _, _ in agent.records("edit")] == [str(agent.project / "p.py")]
    out = agent.output(agent.hook("cline", "TaskResume", base | {"taskResume": {}}))
    assert out is not None and out["cancel"] is False and "Never use regex" in out["contextModification"]
    assert agent.output(agent.hook("cline", "TaskResume", b"not json")) == {"cancel": False}


GARBAGE = [
    b"",
    b"not json",
    b"[1, 2]",
    b'{"session_id": "../../etc"}',
    b"\xff\xfe garbage",
    json.dumps(
        {
            "session_id": "s-1",
            "taskId": "s-1",
            "conversation_id": "s-1",
            "sessionId": "s-1",
            "trajectory_id": "s-1",
            "tool_name": 5,
            "tool_response": [1],
            "tool_input": "x",
            "prompt": 3,
            "tool_info": 7,
            "postToolUse": [],
            "transcript_path": 9,
            "source": "compact",
        }
    ).encode(),
]
EVENTS = (
    [("codex", e) for e in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact", "Nope")]
    + [("gemini", e) for e in ("SessionStart", "BeforeAgent", "AfterTool", "AfterAgent", "SessionEnd")]
    + [
        ("cursor", e)
        for e in (
            "sessionStart",
            "beforeSubmitPrompt",
            "afterShellExecution",
            "afterMCPExecution",
            "afterFileEdit",
            "stop",
        )
    ]
    + [("vscode", e) for e in ("SessionStart", "UserPromptSubmit", "PostToolUse", "Stop")]
    + [("windsurf", e) for e in ("pre_user_prompt", "post_run_command", "post_mcp_tool_use", "post_write_code")]
    + [("cline", e) for e in ("TaskStart", "TaskResume", "UserPromptSubmit", "PostToolUse")]
)
NEUTRAL = {
    ("cline", e): b'{"cancel": false}\n' for e in ("TaskStart", "TaskResume", "UserPromptSubmit", "PostToolUse")
} | {("cursor", "beforeSubmitPrompt"): b'{"continue": true}\n'}


@pytest.mark.parametrize(("client", "event"), EVENTS)
def test_input_of_an_unknown_shape_exits_0_prints_at_most_the_neutral_answer_and_logs(
    tmp_path: Path, client: str, event: str
) -> None:
    agent = Agent(tmp_path)
    for stdin in GARBAGE:
        done = agent.hook(client, event, stdin)
        assert (done.returncode, done.stderr) == (0, b"") and done.stdout in (b"", NEUTRAL.get((client, event), b"")), (
            stdin,
            done,
        )
    assert f"{client} {event} failed" in agent.logged() or f"{client} {event} ok" in agent.logged() or event == "Nope"
    assert "Traceback" not in agent.logged()


def test_an_unknown_event_is_logged_not_run(tmp_path: Path) -> None:
    agent = Agent(tmp_path)
    assert agent.output(agent.hook("codex", "Nope", agent.base())) is None
    assert "codex Nope failed" in agent.logged() and "unknown event 'Nope'" in agent.logged()


def test_the_client_hooks_import_no_pydantic_asyncio_aiosqlite_tiktoken_mcp_inspect_or_typing(tmp_path: Path) -> None:
    """The slow standard-library imports too: inspect (through dataclasses) ~7 ms, typing ~3 ms a process."""
    agent = Agent(tmp_path)
    rollout = agent.codex_rollout("codex-rollout-compacted.jsonl")
    chat = agent.gemini_chat("gemini-chat-compressed.jsonl")
    probe = (
        "import sys, io, json\nfrom ctxkeep.cli import main\n"
        "sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[3].encode()))\nmain(['hook', sys.argv[1], sys.argv[2]])\n"
        "heavy = [m for m in ('pydantic', 'asyncio', 'aiosqlite', 'tiktoken', 'mcp', 'anyio', 'inspect', 'dataclasses', 'typing') "
        "if m in sys.modules]\n"
        "sys.stderr.write(json.dumps(heavy))\n"
    )
    inputs = [
        ("codex", "UserPromptSubmit", agent.base(prompt="never push to main")),
        (
            "codex",
            "PostToolUse",
            agent.base(tool_name="Bash", tool_input={"command": "make"}, tool_response=BIG, tool_use_id="c"),
        ),
        ("codex", "SessionStart", agent.base(source="compact", transcript_path=str(rollout))),
        ("codex", "Stop", agent.base(stop_hook_active=False)),
        (
            "gemini",
            "AfterTool",
            agent.base(
                transcript_path=str(chat),
                tool_name="run_shell_command",
                tool_input={"command": "make"},
                tool_response={"llmContent": BIG},
            ),
        ),
        ("gemini", "BeforeAgent", agent.base(transcript_path=str(chat), prompt="go on")),
        ("gemini", "SessionStart", agent.base(source="resume")),
        ("cursor", "afterShellExecution", {"conversation_id": "s-1", "command": "make", "output": BIG}),
        (
            "vscode",
            "PostToolUse",
            {"sessionId": "s-1", "tool_name": "run_in_terminal", "tool_input": {"command": "ls"}, "tool_response": BIG},
        ),
        ("windsurf", "post_run_command", {"trajectory_id": "s-1", "tool_info": {"command_line": "ls"}}),
        ("cline", "TaskResume", {"taskId": "s-1"}),
    ]
    for client, event, stdin in inputs:
        done = subprocess.run(
            [sys.executable, "-c", probe, client, event, json.dumps(stdin)],
            capture_output=True,
            env=agent.env(),
            timeout=60,
        )
        assert json.loads(done.stderr.decode().strip().splitlines()[-1]) == [], (client, event, done.stderr[-2000:])


# ctxkeep's own tools, in every client

MEMORIES = json.dumps(
    {"memories": [{"id": f"mem_{n}", "key": f"billing.rule.{n}", "value": "keep invoices " * 12} for n in range(80)]}
)
OWN_TOOL_CALLS: list[tuple[str, str, dict[str, Any]]] = [
    (
        "claude-code",
        "post-tool-use",
        {"tool_name": "mcp__ctxkeep__memory_search", "tool_input": {"query": "billing"}, "tool_response": MEMORIES},
    ),
    (
        "codex",
        "PostToolUse",
        {
            "tool_name": "mcp__ctxkeep__memory_search",
            "tool_input": {"query": "billing"},
            "tool_response": {"content": [{"type": "text", "text": MEMORIES}], "isError": False},
        },
    ),
    (
        "gemini",
        "AfterTool",
        {
            "tool_name": "mcp_ctxkeep_memory_search",
            "tool_input": {"query": "billing"},
            "tool_response": {"llmContent": MEMORIES},
            "mcp_context": {"server_name": "ctxkeep", "tool_name": "memory_search"},
        },
    ),
    (
        "cursor",
        "afterMCPExecution",
        {
            "conversation_id": "s-1",
            "tool_name": "memory_search",
            "tool_input": '{"query": "billing"}',
            "result_json": MEMORIES,
        },
    ),
    (
        "vscode",
        "PostToolUse",
        {"tool_name": "mcp_ctxkeep_memory_search", "tool_input": {"query": "billing"}, "tool_response": MEMORIES},
    ),
    (
        "windsurf",
        "post_mcp_tool_use",
        {
            "trajectory_id": "s-1",
            "execution_id": "e",
            "tool_info": {
                "mcp_server_name": "ctxkeep",
                "mcp_tool_name": "memory_search",
                "mcp_tool_arguments": {"query": "billing"},
                "mcp_result": MEMORIES,
            },
        },
    ),
    (
        "cline",
        "PostToolUse",
        {
            "taskId": "s-1",
            "postToolUse": {
                "toolName": "use_mcp_tool",
                "parameters": {"server_name": "ctxkeep", "tool_name": "memory_search", "arguments": '{"query": "b"}'},
                "result": MEMORIES,
                "success": True,
            },
        },
    ),
]


@pytest.mark.parametrize(("client", "event", "data"), OWN_TOOL_CALLS, ids=[c for c, _, _ in OWN_TOOL_CALLS])
def test_every_client_passes_a_large_ctxkeep_tool_output_through_untouched(
    tmp_path: Path, client: str, event: str, data: dict[str, Any]
) -> None:
    agent = Agent(tmp_path)
    assert len(MEMORIES.encode()) > 14_000
    done = agent.hook(client, event, agent.base() | data)
    assert agent.output(done) in (None, {"cancel": False})  # nothing replaced, nothing added
    assert agent.rows("SELECT COUNT(*) FROM evidence_inbox") == [(0,)]  # ctxkeep never offloads its own tools
    assert f"{client} {event} failed" not in agent.logged() and "offloaded" not in agent.logged()
