"""Every line a session view states is true of the latest records: git state from what git printed, a check's
outcome from its latest run, the agent's todo status as its claim, a plan a todo list replaced, the environment a
failed command and its fix revealed, and prompts that are not requests (built-in commands, notifications)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench import fidelity
from ctxkeep.clients.claude_code.transcript import latest, read_transcript
from ctxkeep.clients.core.events import printed
from ctxkeep.clients.core.injection import GOAL_CHARS, _records_view, quoted, records_view, repair
from ctxkeep.clients.core.session_view import View, derive, instructions_of, must_keep
from ctxkeep.tools.compaction_check import Finding, Item, check_summary
from tests.paths import ROOT


class Session:
    """A Claude Code transcript written line by line, one second apart."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.n = 0

    def _stamp(self) -> str:
        self.n += 1
        return f"2026-11-30T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z"

    def user(self, content: Any) -> Session:
        record = {"type": "user", "timestamp": self._stamp(), "message": {"role": "user", "content": content}}
        self.lines.append(json.dumps(record))
        return self

    def say(self, text: str) -> Session:
        message = {"role": "assistant", "content": [{"type": "text", "text": text}]}
        self.lines.append(json.dumps({"type": "assistant", "timestamp": self._stamp(), "message": message}))
        return self

    def tool(self, name: str, data: dict[str, Any], output: str, error: bool = False) -> Session:
        use_id = f"t{len(self.lines)}"
        call = {"type": "tool_use", "id": use_id, "name": name, "input": data}
        self.lines.append(
            json.dumps(
                {"type": "assistant", "timestamp": self._stamp(), "message": {"role": "assistant", "content": [call]}}
            )
        )
        outcome = {"type": "tool_result", "tool_use_id": use_id, "content": output, "is_error": error}
        self.lines.append(
            json.dumps({"type": "user", "timestamp": self._stamp(), "message": {"role": "user", "content": [outcome]}})
        )
        return self

    def bash(self, command: str, output: str = "", error: bool = False) -> Session:
        return self.tool("Bash", {"command": command}, output, error)

    def edit(self, path: str) -> Session:
        return self.tool("Edit", {"file_path": path, "old_string": "a", "new_string": "b"}, "The file was updated.")

    def view(self) -> View:
        return derive(latest(read_transcript(self.lines).records))

    def text(self) -> str:
        return records_view(self.view(), "header", 9_000)


def _session() -> Session:
    return Session().user("Fix the login bug in app.py and keep the tests green")


def test_a_commit_git_reports_clears_the_edits_before_it() -> None:
    s = _session().edit("/p/app.py").edit("/p/util.py").edit("/p/app.py")
    s.bash("git add -A && git commit -m 'Fix login'", "[main 1a2b3c4] Fix login\n 2 files changed, 4 insertions(+)")
    view = s.view()
    assert view.uncommitted == []
    text = s.text()
    assert "not committed" not in text.casefold()
    assert "Latest commit: 1a2b3c4 Fix login" in text
    assert any(i.kind == "fact" and i.value == "1a2b3c4" for i in must_keep(view))


def test_the_latest_commits_message_body_is_quoted_and_only_with_its_own_commit() -> None:
    heredoc = "git commit -m \"$(cat <<'EOF'\nfeat: promote gate\n\nChecks FK refs and schema_version.\n"
    heredoc += 'Assisted-By: Claude Code\nEOF\n)"'
    s = _session().edit("/p/gate.py").bash(heredoc, "[main 1a2b3c4] feat: promote gate\n 1 file changed")
    assert "  > its message goes on: Checks FK refs and schema_version.; Assisted-By: Claude Code\n" in s.text()
    s.bash('git commit -am "fix: typo"', "[main 5d6e7f8] fix: typo\n 1 file changed")
    assert "Latest commit: 5d6e7f8 fix: typo" in s.text() and "its message goes on" not in s.text()


def test_a_repair_lists_the_earlier_commits_a_summary_does_not_name() -> None:
    s = _session().edit("/p/a.py").bash("git commit -qam one", "[main 20b75a6] one")
    s.edit("/p/b.py").bash("git commit -qam two", "[main ffc7ea6] two").bash(
        "git commit -qam three", "[main 74d3f25] three"
    )
    repaired = repair(check_summary(must_keep(s.view()), "Committed 74d3f25."), "header", 4_000)
    assert "Earlier commits this session: 20b75a6 one; ffc7ea6 two" in repaired
    assert "Latest commit" not in repaired  # the summary names it
    said = repair(check_summary(must_keep(s.view()), "Commits 20b75a6, ffc7ea6 and 74d3f25."), "header", 4_000)
    assert "Earlier commits" not in said


def test_a_pull_request_the_agent_opened_is_stated_with_its_title_and_description() -> None:
    command = 'gh pr create --title "fix: stop reusing checkpoint ids" --body "$(cat <<\'EOF\'\n## Summary\n'
    command += '- Filter sessions by HEAD\n- Fall back to the live transcript\nEOF\n)"'
    s = _session().bash(command, "https://github.com/o/r/pull/85\n")
    text = s.text()
    assert "- Pull request opened: https://github.com/o/r/pull/85 fix: stop reusing checkpoint ids\n" in text, text
    assert "  > its description: ## Summary; - Filter sessions by HEAD; - Fall back to the live transcript" in text
    repaired = repair(check_summary(must_keep(s.view()), "Opened a PR."), "header", 4_000)
    assert "pull/85" in repaired
    assert "Pull request" not in _session().bash("gh pr view 85", "https://github.com/o/r/pull/85").text()
    short = _session().bash('gh pr create -t "fix: x" -b "Why: y"', "https://github.com/o/r/pull/3\n").text()
    assert "- Pull request opened: https://github.com/o/r/pull/3 fix: x\n  > its description: Why: y\n" in short


def test_an_edit_after_the_commit_is_the_only_uncommitted_file() -> None:
    s = _session().edit("/p/app.py").bash("git commit -am wip", "[main 1a2b3c4] wip\n 1 file changed").edit("/p/cli.py")
    assert s.view().uncommitted == ["/p/cli.py"]
    assert "Edited after the latest commit (1a2b3c4 wip), not committed since: 1 file(s) (cli.py)" in s.text()


def test_a_quiet_commit_counts_and_a_commit_of_nothing_does_not() -> None:
    quiet = _session().edit("/p/app.py").bash("git commit -qam 'Fix'", "")
    assert quiet.view().uncommitted == []
    nothing = _session().edit("/p/app.py")
    nothing.bash(
        "git commit -m 'Fix'", 'On branch main\nno changes added to commit (use "git add" and/or "git commit -a")'
    )
    assert nothing.view().uncommitted == ["/p/app.py"]


def test_git_status_says_which_files_are_not_committed() -> None:
    s = _session().edit("/p/app.py").edit("/p/util.py")
    s.bash("git commit -qam 'Fix'", "")
    s.bash("git status", "On branch main\nChanges not staged for commit:\n\tmodified:   util.py\n")
    assert s.view().uncommitted == ["/p/util.py"]
    s.bash("git status --short", "")
    assert s.view().uncommitted == ["/p/util.py"]  # an empty short listing is no clean tree: the earlier one stands
    s.bash("git status", "On branch main\nnothing to commit, working tree clean\n")
    assert s.view().uncommitted == []


def test_a_later_success_of_the_same_kind_supersedes_a_failed_build() -> None:
    s = _session().edit("/p/src/main.rs")
    s.bash("cargo build", "bash: line 1: cargo: command not found", error=True)
    s.bash(
        'source "$HOME/.cargo/env" && cargo build', "   Compiling app v0.1.0\n    Finished dev [unoptimized] target(s)"
    )
    s.bash('source "$HOME/.cargo/env" && cargo build --release', "    Finished release [optimized] target(s)")
    text = s.text()
    assert "build run failed" not in text
    assert "Checks run after the last edit: build passed" in text
    env = [line for line in text.splitlines() if "cargo" in line and "ran as" in line]
    assert env == ['> `cargo` failed (cargo not found); it ran as `source "$HOME/.cargo/env" && cargo`'], text
    assert "Failed, and not run again" not in text  # the environment fact says it: no second line for the error


def test_a_failure_a_later_call_got_past_is_a_fact_with_its_error_and_what_worked() -> None:
    s = _session().bash(
        "git diff 79fadb8^..79fadb8 --stat",
        "Exit code 128\nfatal: ambiguous argument '79fadb8^..79fadb8': unknown revision or path not in the working tree.",
        error=True,
    )
    assert "Failed, and not run again successfully (Bash:git diff): fatal: ambiguous argument" in s.text()
    s.bash("git fetch origin main", "From github.com:o/r\n   ef3b980..79fadb8  main -> origin/main")
    s.bash("git diff ef3b980..79fadb8 --stat", " src/app.ts | 4 ++--")
    s.tool("Edit", {"file_path": "/p/a.ts", "old_string": "x", "new_string": "y"}, "File has not been read yet.", True)
    s.tool("Edit", {"file_path": "/p/a.ts", "old_string": "x", "new_string": "y"}, "The file /p/a.ts has been updated.")
    text = s.text()
    assert "Failed, and not run again" not in text
    assert "> Bash `git diff` failed: fatal: ambiguous argument '79fadb8^..79fadb8': unknown revision" in text, text
    assert "then `git diff ef3b980..79fadb8 --stat` worked" in text
    assert "> Edit failed: File has not been read yet.; then a later Edit call worked" in text
    repaired = repair(check_summary(must_keep(s.view()), "We fixed the diff."), "header", 4_000)
    assert "unknown revision" in repaired and "Failures a later call got past" in repaired


def test_a_tools_refusal_got_past_for_many_files_is_one_fact() -> None:
    s = _session()
    for path in ("/p/a.ts", "/p/b.ts", "/p/c.ts"):
        s.tool("Edit", {"file_path": path, "old_string": "x", "new_string": "y"}, "File has not been read yet.", True)
        s.tool("Edit", {"file_path": path, "old_string": "x", "new_string": "y"}, f"The file {path} has been updated.")
    s.bash("git push", "fatal: The current branch fix has no upstream branch.", error=True)
    s.bash("git push --set-upstream origin fix", "branch 'fix' set up to track 'origin/fix'.")
    facts = [r.text for r in s.view().got_past]
    assert facts == [
        "Edit failed: File has not been read yet.; then a later Edit call worked",
        "Bash `git push` failed: fatal: The current branch fix has no upstream branch.; then "
        "`git push --set-upstream origin fix` worked",
    ]


def test_a_failure_that_says_nothing_or_a_script_that_got_past_it_is_no_fact() -> None:
    s = _session().bash("grep -rn TODO src", "Exit code 1", error=True).bash("grep -rn TODO src", "src/a.py:1: TODO")
    s.bash("make deploy", "Exit code 2\nmake: *** [deploy] Error 2", error=True)
    s.bash("make deploy\nmake smoke", "ok")  # a script: which of its lines got past the failure is not known
    s.tool(
        "Edit", {"file_path": "/p/b.py"}, "Found 2 matches of the string to replace, but replace_all is false.", True
    )
    s.tool("Edit", {"file_path": "/p/b.py"}, "The file /p/b.py has been updated.")
    assert s.view().got_past == []
    assert "failed:" not in s.text() and "Failed, and not run again" not in s.text()


def test_a_call_that_never_ran_is_no_failure() -> None:
    sibling = "<tool_use_error>Sibling tool call errored</tool_use_error>"
    s = _session().bash("pytest -q", sibling, error=True)
    s.tool("AskUserQuestion", {"questions": []}, "Tool permission request failed: AbortError", error=True)
    text = s.text()
    assert "Failed, and not run again" not in text and "AbortError" not in text and "Sibling" not in text
    s.bash("rm -rf build", "rm: cannot remove 'build': Permission denied", error=True)  # one that ran and failed
    assert "Failed, and not run again successfully (Bash:rm -rf): rm: cannot remove 'build'" in s.text()


def test_a_non_zero_exit_that_names_no_error_is_no_failure_and_a_traceback_is_its_exception() -> None:
    s = _session().bash("git check-ignore -v dist/", "Exit code 1", error=True)
    s.bash("diff a.json b.json", 'Exit code 1\n12a13,14\n>   "mode": "full"', error=True)
    assert "Failed, and not run again" not in s.text()
    traceback = "Exit code 1\nTraceback (most recent call last):\n  File \"app.py\", line 3\nKeyError: 'DATABASE_URL'"
    s.bash("python app.py", traceback, error=True)
    assert "Failed, and not run again successfully (Bash:python app.py): KeyError: 'DATABASE_URL'" in s.text()


def test_the_names_edits_brought_in_are_stated_by_file_latest_first() -> None:
    s = _session().tool(
        "Edit",
        {"file_path": "/p/src/db.ts", "old_string": "const result_id = 1;", "new_string": "const result_id = 1;\n"
         "db.exec('ALTER TABLE remediations ADD plan_data_json TEXT'); parsePlanData(result_id);"},
        "The file /p/src/db.ts has been updated.",
    )  # fmt: skip
    s.tool(
        "Write",
        {"file_path": "/p/src/steps.py", "content": "class RemediationStep:\n    def planning_error_fix(self): ..."},
        "ok",
    )
    s.tool("Edit", {"file_path": "/p/src/x.py", "old_string": "a", "new_string": "b"}, "denied", error=True)
    text = s.text()
    line = (
        "- Names the latest edits brought in (exact, by file): steps.py: RemediationStep, planning_error_fix; db.ts: "
    )
    assert line + "plan_data_json, parsePlanData\n" in text, text  # result_id was there before; a failed edit adds none


def test_an_error_a_passing_test_logged_is_no_failure_but_a_counted_failure_is() -> None:
    logged = " Error: Connection refused\n    at checkVelocity (velocity.ts:24:8)\n\n Test Files  32 passed (32)\n"
    logged += "      Tests  324 passed (324)\n   Start at  00:37:43\n   Duration  8.01s\n"
    s = _session().edit("/p/app.ts").bash("pnpm test 2>&1 | tail -30", logged)  # the pipe hides the exit code
    assert "Checks run after the last edit: test passed" in s.text()
    s.bash("pnpm test 2>&1 | tail -30", " Tests  2 failed | 322 passed (324)\n   Duration  8.01s\n")
    assert "Checks run after the last edit: test failed" in s.text()
    s.bash("pnpm test 2>&1 | tail -30", "Traceback (most recent call last):\n  File x\nValueError: boom\n")
    assert "Checks run after the last edit: test failed" in s.text()  # no count of passes: the error stands


def test_the_latest_failure_is_stated_with_its_command() -> None:
    s = _session().edit("/p/app.py").bash("pytest -q", "1 passed").edit("/p/app.py")
    s.bash("pytest -q", "FAILED tests/test_app.py::test_login - AssertionError\n1 failed, 3 passed", error=True)
    text = s.text()
    assert (
        "The latest test run failed: `pytest -q` (1 failed, 3 passed; failing: tests/test_app.py::test_login)" in text
    )
    assert "Failed, and not run again" not in text  # the check's line says it once
    assert "No passing test, build or lint run since these edits: app.py" in text
    assert "No test, build or lint ran after" not in text  # one did run: it failed


def test_the_latest_passing_run_names_its_command_and_commits_are_listed() -> None:
    s = _session().edit("/p/app.py").bash("git commit -qam one", "[main 1111111] one\n 1 file changed")
    s.edit("/p/app.py").bash("git commit -qam two", "[main 2222222] two\n 1 file changed")
    s.bash("uv run python -m pytest tests/ -x -q", "57 passed in 3.2s").bash("uvx ruff check src", "Found 2 errors.")
    text = s.text()
    assert "- Latest commit: 2222222 two" in text and "- Earlier commits this session: 1111111 one" in text
    assert "- The latest test run passed: `uv run python -m pytest tests/ -x -q`" in text
    assert "The latest lint run failed: `uvx ruff check src` (Found 2 errors.)" in text


def test_no_check_after_the_edits_is_said_so() -> None:
    s = _session().bash("pytest -q", "4 passed").edit("/p/app.py")
    assert "No test, build or lint ran after these edits: app.py" in s.text()


def test_the_agents_todo_status_is_its_claim_not_a_fact() -> None:
    todos = [
        {"content": "Add the login test", "status": "completed"},
        {"content": "Update the README", "status": "pending"},
    ]
    text = _session().tool("TodoWrite", {"todos": todos}, "Todos have been modified").text()
    assert "Marked completed on the agent's todo list (its own status): Add the login test" in text
    assert "- Done:" not in text
    assert "- Update the README" in text.split("## Still pending", 1)[1]


def test_a_todo_list_written_after_the_plan_takes_its_place() -> None:
    plan = "# Plan\n1. Rewrite the session store in Redis\n2. Migrate the old sessions\n3. Remove the file store"
    s = _session().tool("ExitPlanMode", {"plan": plan}, "User has approved your plan.")
    assert "Rewrite the session store in Redis" in s.view().pending
    todos = [{"content": "Keep the file store and fix its locking", "status": "in_progress"}]
    s.user("No, don't bring in Redis; fix the file store's locking instead")
    s.tool("TodoWrite", {"todos": todos}, "Todos have been modified")
    view = s.view()
    assert view.pending == ["Keep the file store and fix its locking"]
    assert "Rewrite the session store in Redis" not in s.text().split("## Still pending", 1)[1].split("##", 1)[0]
    assert any("fix the file store's locking instead" in d.text for d in view.decisions)


def test_built_in_commands_and_notifications_are_not_requests() -> None:
    s = (
        _session()
        .user("Also add a logout button")
        .user("<command-name>/compact</command-name>\n<command-args></command-args>")
    )
    s.user("<task-notification>\n<task-id>b1</task-id>\n<status>completed</status>\n</task-notification>")
    s.user('{"task_id": "a248ea9", "description": "Explore the code", "task_type": "local_agent"}')  # a queued notice
    s.user('<teammate-message teammate_id="renamer">Task #3 complete: do not push yet.</teammate-message>')
    view = s.view()
    assert view.request == "Also add a logout button"
    assert not any(
        "compact" in p or "task-notification" in p or "task_id" in p or "teammate" in p for p in view.prompts
    )
    assert not any("push" in i for i in view.instructions)  # a team member's report is not the person's rule
    s.user('{"name": "x"} is what the endpoint returns; make it a list')  # a person's words that start with JSON
    assert s.view().request.startswith('{"name": "x"} is what')


def test_the_agents_next_steps_come_after_its_todo_list() -> None:
    todos = [{"content": "Fix the login bug", "status": "completed"}]
    s = _session().tool("TodoWrite", {"todos": todos}, "ok")
    s.say(
        "The fix is in.\n\n## Next steps\n1. Fix the test assertions in test_app.py\n2. Update the README\n3. Rebuild the image"
    )
    view = s.view()
    assert view.next_steps == ["Fix the test assertions in test_app.py", "Update the README", "Rebuild the image"]
    assert "## Next steps the agent listed (its words)\n> Fix the test assertions in test_app.py" in s.text()


def test_an_all_done_claim_names_what_is_still_open() -> None:
    s = _session().edit("/p/app.py")
    s.tool("TodoWrite", {"todos": [{"content": "Write the migration", "status": "pending"}]}, "ok")
    findings = check_summary(must_keep(s.view()), "All tasks are complete and the login bug is fixed.")
    claim = [f for f in findings if f.rule == "summary_claim_unverified"]
    assert claim and "Write the migration" in claim[0].detail and "app.py" in claim[0].detail


def test_a_spec_the_first_prompt_names_is_read_for_its_rules() -> None:
    doc = "# Task\n\n## Deliverables\n- A CSV of the quarterly totals\n- Never round the amounts\n"
    s = Session().user("Read doc.md and do what it says").tool("Read", {"file_path": "/p/doc.md"}, doc)
    rules = [r.text for r in s.view().rules]
    assert "Never round the amounts" in rules and "A CSV of the quarterly totals" in rules
    assert all(r.source == "Read: /p/doc.md (the file the request names)" for r in s.view().rules)


def test_a_merge_that_stopped_on_conflicts_is_open_until_a_commit() -> None:
    out = "Auto-merging app.py\nCONFLICT (content): Merge conflict in app.py\nAutomatic merge failed; fix conflicts and then commit the result."
    s = _session().bash("git merge origin/main", out, error=True)
    assert "Not concluded: `git merge origin/main` stopped on conflicts (app.py): resolve them, then commit" in s.text()
    s.edit("/p/app.py").bash("git commit -am 'Merge origin/main'", "[main 3c3c3c3] Merge origin/main")
    assert "Not concluded" not in s.text()


def test_the_users_answers_and_refusals_are_decisions() -> None:
    answered = (
        'User has answered your questions: "Which rig do these beads belong to?"="No rig", '
        '"Which tools should we set up?"="Credo + Dialyxir". You can now continue with the user\'s answers in mind.'
    )
    s = _session().tool("AskUserQuestion", {"questions": []}, answered)
    s.tool(
        "ExitPlanMode",
        {"plan": "1. Rewrite everything"},
        "The user doesn't want to proceed with this tool use.",
        error=True,
    )
    decisions = [d.text for d in s.view().decisions]
    assert "The user answered: No rig — to the question: Which rig do these beads belong to?" in decisions
    assert "The user refused the plan the agent proposed (ExitPlanMode)" in decisions
    assert "Failed, and not run again" not in s.text()


def test_what_the_work_found_out_is_kept_in_the_agents_words() -> None:
    s = _session().say("I looked at the logs. The root cause is that initHookLogging() runs before stdin is parsed.")
    s.say("Note: FindMostRecentSession must stay, it is still used by debug.go.")
    found = [f.text for f in s.view().findings]
    assert found == [
        "The root cause is that initHookLogging() runs before stdin is parsed.",
        "Note: FindMostRecentSession must stay, it is still used by debug.go.",
    ]
    assert "## What the work found out (the agent's words, quoted)\n> The root cause is" in s.text()


def test_a_repair_never_prints_past_its_budget_with_its_counts_of_what_did_not_fit() -> None:
    findings = [
        Finding("summary_pending_missing", Item("pending", f"Step {n}: " + "x" * 50), "lost") for n in range(12)
    ]
    for budget in range(150, 1_000):  # every way the last line and the count of the rest can meet the budget
        shown = repair(findings, "header", budget, printed)
        assert printed(shown.rstrip("\n")) <= budget, budget


def test_room_the_records_leave_goes_to_more_of_a_long_first_request() -> None:
    plan = "Implement the following plan: " + " ".join(f"step {n} touches file_{n}.go." for n in range(400))
    s = Session()
    s.user(plan)
    shown = records_view(derive(latest(read_transcript(s.lines).records)), "header", 9_000)
    assert "file_100.go" in shown and len(shown) <= 9_000  # past the first 1,200 characters, within the budget
    small = records_view(derive(latest(read_transcript(s.lines).records)), "header", 2_000)
    assert "file_30.go" in small and "file_100.go" not in small and len(small) <= 2_000


def test_more_of_the_first_request_never_costs_another_record_line() -> None:
    plan = "Implement the following plan: " + " ".join(f"step {n} touches file_{n}.go." for n in range(400))
    s = Session().user(plan)
    for n in range(6):
        s.user(f"Also check module {n} for the locale bug and report back")
        s.say(f"Finding {n}: " + "the cache key ignores the locale, so two users share a page. " * 12)
    view = s.view()
    for budget in (3_000, 4_000, 6_000):
        base = _records_view(view, "header", budget, None, len, "", GOAL_CHARS)
        shown = records_view(view, "header", budget).splitlines()
        goal = quoted(view.goal or "", GOAL_CHARS)
        lines = [line for line in base.splitlines() if line != goal and line.startswith(("> ", "- "))]
        assert all(line in shown for line in lines), budget


def test_the_branch_is_the_one_git_named_last() -> None:
    s = _session().bash("git status", "On branch main\nnothing to commit, working tree clean")
    assert s.view().branch == "main"
    s.bash("git checkout -b spike/sync", "Switched to a new branch 'spike/sync'")
    assert "- On branch spike/sync (git said so last)" in s.text()
    assert any(i.kind == "fact" and i.value == "spike/sync" for i in must_keep(s.view()))
    s.bash("git checkout release", "error: pathspec 'release' did not match", error=True)  # a failed switch: no move
    s.bash("git commit -m wip", "[detached HEAD 1a2b3c4] wip\n 1 file changed")  # git names no branch here
    assert s.view().branch == "spike/sync"
    s.bash("git branch --show-current", "fix/login\n")
    assert s.view().branch == "fix/login"
    s.bash("git status", "HEAD detached at 1a2b3c4\nnothing to commit")  # no branch now, and none is said
    assert s.view().branch == "HEAD" and "On branch" not in s.text()
    s.bash("git switch fix/login", "Switched to branch 'fix/login'")
    s.bash("git branch --show-current", "")  # detached again: --show-current prints nothing
    assert s.view().branch == "HEAD"
    detached = _session().bash("git log -1", "").user("go on")
    detached.lines.append(
        json.dumps(
            {
                "type": "user",
                "gitBranch": "HEAD",
                "timestamp": "2026-11-30T11:00:00.000Z",
                "message": {"role": "user", "content": "and then?"},
            }
        )
    )
    assert detached.view().branch == "HEAD"  # Claude Code's word for a detached HEAD (a jj repository)
    assert "On branch" not in detached.text()
    assert not any(i.kind == "fact" and "Branch" in i.text for i in must_keep(detached.view()))


def test_a_real_sessions_view_keeps_its_records_when_its_pasted_plan_could_grow(tmp_path: Path) -> None:
    # bench/blind4's second tij session, resumed through the real hooks: growing the pasted plan into the room left
    # had pushed out the user's review points, the pending API question and the updated tests
    compaction = json.loads((ROOT / "bench" / "blind4" / "items.json").read_text())["compactions"][2]
    lines = fidelity.transcript_lines(ROOT / "bench" / "blind4" / compaction["file"])[: compaction["boundary_line"] - 1]
    session = fidelity._Session(tmp_path)
    session.transcript.write_text("\n".join(lines) + "\n", encoding="utf-8")
    session.hook("pre-compact", hook_event_name="PreCompact", trigger="auto")
    view = fidelity._context(session.hook("session-start", hook_event_name="SessionStart", source="resume"))
    wanted = ("pending-api-compat", "request-review-points", "state-integration-tests-updated")
    items = [item for item in compaction["items"] if item["id"] in wanted]
    assert len(items) == 3 and view
    assert [item["id"] for item in items if not fidelity.carried(item, view)] == []


def test_what_an_ide_adds_to_a_prompt_is_not_the_persons_words() -> None:
    s = Session().user(
        "<ide_opened_file>The user opened the file /tmp/issue.md in the IDE. This may or may not be related to the "
        "current task.</ide_opened_file> Pull issue 1 and fix it"
    )
    s.user("<ide_selection>def f(): pass</ide_selection>")
    view = s.view()
    assert view.goal == "Pull issue 1 and fix it"
    assert view.prompts == ["Pull issue 1 and fix it"]  # a prompt that held only the IDE's context is none


def test_code_a_long_prompt_quotes_is_no_instruction_and_a_listed_rule_is_stated_once() -> None:
    prompt = (
        "# Plan\n\n## Steps\n- Move the loop into a class.\n- Never change the public API.\n- Keep tests green.\n\n"
    )
    prompt += "```ts\ntry { parse(line) } catch { // Malformed JSON - log but don't crash\n}\n```\n" + "Context. " * 60
    assert instructions_of(prompt) == ["Never change the public API.", "Keep tests green."]


def test_a_check_that_failed_run_one_way_and_passed_run_another_is_a_fact() -> None:
    s = _session().edit("/p/src/app.ts")
    s.bash("pnpm test", " ERR_PNPM_NO_IMPORTER_MANIFEST_FOUND  No package.json was found in /p.")
    s.bash("pnpm --dir apps/web test", " Tests  324 passed (324)")
    text = s.text()
    assert "The latest test run failed" not in text and "Checks run after the last edit: test passed" in text
    assert "> `pnpm test` failed: ERR_PNPM_NO_IMPORTER_MANIFEST_FOUND" in text, text
    assert "then `pnpm --dir apps/web test` passed" in text


def test_the_scripts_of_a_package_json_the_agent_read_are_an_environment_fact() -> None:
    manifest = '{\n  "name": "web",\n  "scripts": {"test": "vitest run", "verify": "turbo run typecheck lint test"}\n}'
    numbered = "\n".join(f"{n:>6}\u2192{line}" for n, line in enumerate(manifest.splitlines(), 1))
    s = _session().tool("Read", {"file_path": "/p/apps/web/package.json"}, numbered)
    s.tool("Read", {"file_path": "/p/notes.json"}, '{"scripts": {"x": "y"}}')  # not a package manifest
    env = [line for line in s.text().splitlines() if "scripts:" in line]
    assert env == ["> web/package.json scripts: `test`: vitest run; `verify`: turbo run typecheck lint test"], env


def test_the_names_of_an_edit_are_found_in_linear_time_on_a_long_mixed_case_word() -> None:
    """A nested pattern backtracked exponentially here (40 characters took a third of a second, each two more double)."""
    from ctxkeep.clients.core.capture import added_names

    word = "aA" * 5_000 + "_"
    assert added_names({"old_string": "", "new_string": f"{word} plan_data_json"}) == [word, "plan_data_json"]


def test_a_secret_an_edit_brings_in_is_not_stated_as_a_name() -> None:
    token = "ghp_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    s = _session().tool(
        "Edit", {"file_path": "/p/cfg.py", "old_string": "", "new_string": f"GH_TOKEN = '{token}'"}, "ok"
    )
    text = s.text()
    assert "Names the latest edits brought in" in text and "GH_TOKEN" in text
    assert token not in text and token[4:] not in text
    assert not any(token in r.text for r in latest(read_transcript(s.lines).records))
