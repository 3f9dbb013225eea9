"""The two briefs, through the real hooks as Claude Code runs them: PreCompact prints what the summary must carry
(Claude Code adds that stdout to its compaction instructions), and a new session starts where the last one stopped;
a session start that follows another without a compaction does not inject the same view twice."""

from __future__ import annotations

import json
from pathlib import Path

from tests.claude_home import Claude

RULE = "Never push to main; open a pull request instead"


def _work(claude: Claude) -> None:
    claude.prompt(f"Fix the login bug in app.py. {RULE}.")
    todos = [{"content": "Add a regression test for the login bug", "status": "pending", "activeForm": "Adding"}]
    claude.post_tool_use("TodoWrite", {"todos": todos}, {"oldTodos": [], "newTodos": todos}, use_id="t1")
    edit = {"file_path": str(claude.project / "app.py"), "old_string": "a", "new_string": "b"}
    claude.post_tool_use("Edit", edit, {"filePath": edit["file_path"]}, use_id="t2")
    claude.append({"type": "user", "message": {"role": "user", "content": f"Fix the login bug in app.py. {RULE}."}})


def test_pre_compact_prints_what_the_summary_must_carry_as_plain_text(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    _work(claude)
    done = claude.pre_compact()
    assert done.returncode == 0 and done.stderr == b""
    brief = done.stdout.decode("utf-8")
    assert brief.startswith("ctxkeep: the session's records hold the items below.")
    assert "Never push to main" in brief and "Add a regression test for the login bug" in brief
    assert "app.py" in brief.split("State of the work", 1)[1]  # edited, no check since, no commit seen
    assert len(brief) <= 3_000
    again = claude.pre_compact()  # the transcript is unchanged now: still the brief (the compaction goes on)
    assert again.stdout.decode("utf-8") == brief


def test_pre_compact_prints_nothing_with_the_switch_off(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    _work(claude)
    assert claude.pre_compact(CTXKEEP_COMPACT_BRIEF="off").stdout == b""


def test_a_new_session_starts_with_where_the_last_one_stopped(tmp_path: Path) -> None:
    earlier = Claude(tmp_path)
    _work(earlier)
    brief = earlier.session_start("startup", session_id="s-2")
    assert "this project's earlier work" in brief
    assert RULE in brief and "Add a regression test for the login bug" in brief
    assert len(json.dumps(brief)) <= 2_000
    assert "s-1" not in brief or "checkpoint_load" not in brief  # no task to load is named before one is saved


def test_a_saved_open_task_is_named_with_the_call_that_loads_it(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.save_task("login-fix", {"goal": "Fix the login bug", "constraints": [RULE], "pending": ["Deploy the fix"]})
    brief = claude.session_start("startup", session_id="s-2")
    assert 'checkpoint_load(task_id="login-fix")' in brief and "Deploy the fix" in brief and RULE in brief


def test_no_startup_brief_when_switched_off_too_old_or_nothing_is_open(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    _work(claude)
    start = claude.base("SessionStart", source="startup") | {"session_id": "s-2"}
    assert claude.output(claude.hook("session-start", start, CTXKEEP_START_BRIEF="off")) is None
    assert claude.output(claude.hook("session-start", start, CTXKEEP_START_BRIEF_DAYS="0")) is None
    done = Claude(tmp_path / "done")
    done.save_task("finished", {"goal": "Ship 1.2", "completed": ["Shipped 1.2"]})
    assert done.session_start("startup", session_id="s-2") == ""


def test_a_second_session_start_without_a_compaction_injects_nothing_new(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    _work(claude)
    claude.pre_compact()
    first = claude.session_start("resume")
    assert RULE in first
    assert claude.session_start("resume") == ""  # the same view is in the context already
    assert RULE in claude.session_start("compact")  # a compaction replaced the context: the view goes in again


def test_a_compaction_the_user_asked_for_gets_a_shorter_brief(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    for n in range(40):
        claude.prompt(f"Never touch the generated file gen_{n}.py; regenerate it with make gen instead")
    claude.append({"type": "user", "message": {"role": "user", "content": "Fix the login bug"}})
    auto = claude.hook("pre-compact", claude.base("PreCompact", trigger="auto")).stdout.decode()
    manual = claude.hook("pre-compact", claude.base("PreCompact", trigger="manual")).stdout.decode()
    assert 1_500 < len(auto) <= 3_000 and len(manual) <= 1_500 and manual.startswith("ctxkeep:")
