"""Reading a session's records and task from a Claude Code transcript: prompts, commands, todo lists, plans, odd records."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkeep.clients.core.session_task import merge_todos, session_state
from ctxkeep.clients.claude_code.transcript import latest, read_transcript
from ctxkeep.clients.core.session_view import View, derive
from ctxkeep.models import TaskState
from ctxkeep.tools.checkpoint.verify import verify_states
from tests.paths import TESTS

TRANSCRIPTS = TESTS.parent.parent / "shared" / "data" / "claude-code-transcripts"


def read_session(lines: list[str], read_plan: Any = lambda path: None) -> View:
    """The session view of a transcript's lines, as the pre-compact worker derives it."""
    return derive(latest(read_transcript(lines, read_plan).records))


def user(content: Any, **extra: Any) -> str:
    return json.dumps({"type": "user", "sessionId": "s", "message": {"role": "user", "content": content}, **extra})


def use(name: str, data: dict[str, Any], use_id: str) -> str:
    return json.dumps(
        {
            "type": "assistant",
            "message": {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": use_id, "name": name, "input": data}],
            },
        }
    )


def result(use_id: str, text: str, error: bool = False, **extra: Any) -> str:
    return json.dumps(
        {
            "type": "user",
            "message": {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use_id, "content": text, "is_error": error}],
            },
            **extra,
        }
    )


def test_built_in_commands_are_not_the_goal_but_commands_that_expand_are() -> None:
    lines = [
        user(
            "<command-name>/clear</command-name>\n<command-message>clear</command-message>\n<command-args></command-args>"
        ),
        user("<local-command-stdout></local-command-stdout>"),
        user("Add rate limiting to the /login endpoint"),
        user("<command-name>/review</command-name><command-args>the auth module</command-args>"),
    ]
    view = read_session(lines)
    assert view.prompts == ["Add rate limiting to the /login endpoint", "/review the auth module"]
    assert session_state(view, None).goal == "Add rate limiting to the /login endpoint"


def test_only_instructions_become_constraints() -> None:
    later = [
        "the test suite is still not passing, here is the output: AssertionError ...",
        "did you push?",
        "don't touch the production config",
        "Never force-push to main",
        "keep going",
        "不要修改数据库结构",
        "always run the linter before committing " + "x" * 400,
    ]
    state = session_state(read_session([user("Fix the login bug"), *map(user, later)]), None)
    assert state.constraints == ["don't touch the production config", "Never force-push to main", "不要修改数据库结构"]
    assert state.extra["latest_requests"][-1].startswith("always run the linter")


def test_task_tools_with_ids_from_their_results_and_deleted_tasks() -> None:
    lines = [
        user("Refactor auth"),
        use("TaskCreate", {"subject": "Rewrite the auth module", "description": "…"}, "c1"),
        result("c1", "Task #7 created successfully"),
        use("TaskCreate", {"subject": "Add tests"}, "c2"),
        result("c2", "Task #8 created successfully"),
        use("TaskCreate", {"subject": "Update docs"}, "c3"),
        result("c3", "Task #9 created successfully"),
        use("TaskUpdate", {"taskId": "7", "status": "deleted"}, "u1"),
        result("u1", "Updated task #7"),
        use("TaskUpdate", {"taskId": "8", "status": "in_progress"}, "u2"),
        result("u2", "Updated task #8"),
        use("TaskUpdate", {"taskId": "9", "status": "completed"}, "u3"),
        result("u3", "Updated task #9"),
    ]
    state = session_state(read_session(lines), None)
    assert (state.pending, state.completed, state.next_action) == (["Add tests"], ["Update docs"], "Next: Add tests")


def test_the_plan_comes_from_the_file_on_disk_and_plan_edits_are_not_project_files(tmp_path: Path) -> None:
    plan = "/home/u/.claude/plans/quiet-plan.md"
    lines = [
        user("Speed up the limiter"),
        use("Write", {"file_path": plan, "content": "# Plan\n- Use memcached for the rate limiter"}, "w1"),
        result("w1", "ok"),
        use("Edit", {"file_path": plan, "old_string": "memcached", "new_string": "Redis"}, "e1"),
        result("e1", "ok"),
        use("ExitPlanMode", {}, "x1"),
        result("x1", "User has approved", toolUseResult={"plan": None, "filePath": plan}),
    ]
    on_disk = read_session(
        lines, lambda path: "# Plan\n- Use Redis for the rate limiter\n- Add a test" if path == plan else None
    )
    assert on_disk.plan == ["Use Redis for the rate limiter", "Add a test"] and on_disk.edits == []
    assert read_session(lines).plan == [
        "Use memcached for the rate limiter"
    ]  # the file is gone: as written in the session


def test_the_todo_list_moves_into_the_agents_own_task_and_verifies() -> None:
    agent = TaskState(
        goal="Start phx",
        constraints=["Do not touch prod"],
        pending=["Find what holds port 4000"],
        decisions=["Use 4001"],
    )
    view = read_session(
        [
            user("start"),
            use(
                "TodoWrite",
                {
                    "todos": [
                        {"content": "Find what holds port 4000", "status": "completed"},
                        {"content": "Kill the stale beam", "status": "pending"},
                    ]
                },
                "t1",
            ),
        ]
    )
    merged = merge_todos(agent, view)
    assert (merged.pending, merged.completed, merged.decisions) == (
        ["Kill the stale beam"],
        ["Find what holds port 4000"],
        ["Use 4001"],
    )
    assert verify_states(agent, merged, None) == []


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "message",
                    "content",
                    "role",
                    "text",
                    "name",
                    "input",
                    "id",
                    "tool_use_id",
                    "is_error",
                    "todos",
                    "status",
                    "subject",
                    "taskId",
                    "plan",
                    "filePath",
                    "toolUseResult",
                    "sessionId",
                    "isMeta",
                    "subtype",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(_json, max_size=12), garbage=st.lists(st.text(max_size=30), max_size=3))
def test_any_records_give_a_valid_state(records: list[Any], garbage: list[str]) -> None:
    lines = [json.dumps({"type": "user", "message": {"role": "user", "content": "Fix it"}})]
    lines += [json.dumps(r) for r in records] + garbage
    view = read_session(lines, lambda path: "\x00 plan \ud800" if "x" in path else None)
    first = session_state(view, None)
    second = session_state(read_session(lines + lines), first)
    assert first.goal == "Fix it" and verify_states(first, second, None) == []


def test_a_real_bug_report_is_not_a_constraint() -> None:
    path = TRANSCRIPTS / "tool_heavy.jsonl"
    if not path.exists():
        import pytest

        pytest.skip("../shared/data/claude-code-transcripts is absent")
    state = session_state(read_session(path.read_text().splitlines()), None)
    assert state.constraints == [] and any("xterm.js" in r for r in state.extra["latest_requests"])


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(records=st.lists(_json, max_size=10), raw=st.lists(st.binary(max_size=40), max_size=4))
def test_the_compression_reader_takes_any_jsonl_bytes(
    tmp_path_factory: Any, records: list[Any], raw: list[bytes]
) -> None:
    from ctxkeep.tools.compression.transcript import read_transcript
    from ctxkeep.tools.shared.messages import parse

    path = tmp_path_factory.mktemp("t") / "session.jsonl"
    lines = [json.dumps(r).encode() for r in records] + [b.replace(b"\n", b" ") for b in raw]
    path.write_bytes(b"\n".join(lines) + b"\n")
    from ctxkeep.errors import InvalidInput

    try:
        transcript = read_transcript(path)  # invalid UTF-8, garbage and odd shapes are skipped, never a crash
    except InvalidInput as refused:  # the one documented refusal: nothing in the file is a JSON object
        assert "is not a JSONL transcript" in str(refused) and not any(isinstance(r, dict) for r in records)
        return
    assert transcript.records >= 0 and transcript.skipped >= 0
    parse(transcript.messages, "claude_code")
