"""PreCompact never cuts silently: lists longer than a checkpoint holds overflow to evidence and the state says so;
the agent's own task is never saved non-strict (issue 14, items 2 and 4)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.claude_home import Claude, tool_result, tool_use, user

pytestmark = pytest.mark.slow


def _todos(n: int, done: int = 0) -> dict[str, object]:
    return {
        "todos": [
            {"content": f"migrate table t{i:04d}", "status": "completed" if i < done else "pending"} for i in range(n)
        ]
    }


def test_3000_todos_and_2500_edited_files_overflow_to_evidence_and_the_state_names_them(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    records = [user("Migrate every table")]
    records += [
        tool_use("TodoWrite", _todos(3_000), "todo1"),
        tool_result("todo1", "Todos have been modified successfully"),
    ]
    for i in range(2_500):
        records += [
            tool_use("Edit", {"file_path": f"/p/src/m{i:04d}.py", "old_string": "a", "new_string": "b"}, f"e{i}"),
            tool_result(f"e{i}", "The file has been updated."),
        ]
    claude.append(*records)
    assert claude.pre_compact().returncode == 0
    state = json.loads(claude.rows("SELECT state_json FROM checkpoints ORDER BY version DESC LIMIT 1")[0][0])
    assert len(state["pending"]) == 2_000 and state["pending"][-1].startswith("… 1001 more pending items")
    ref = state["pending"][-1].split("(")[-1].rstrip(")")
    stored = claude.rows("SELECT e.ref FROM evidence e WHERE e.ref = ?", (ref,))
    assert stored == [(ref,)]  # the rest is there, under the ref the state names
    assert any(item.startswith("… ") and "more completed items" in item for item in state["completed"])
    assert claude.rows("SELECT violations_json FROM checkpoints") == [("[]",)]


def test_the_agents_own_task_with_2000_completed_items_takes_one_more_without_a_non_strict_save(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    state = {"goal": "Run the batch", "completed": [f"batch {i}" for i in range(2_000)], "pending": ["batch 2000"]}
    claude.save_task("batch", state)
    claude.append(
        user("run the batch"),
        tool_use("mcp__ctxkeep__checkpoint_save", {"task_id": "batch", "state": {}}, "s1"),
        tool_result("s1", "saved batch v1"),
        tool_use("TodoWrite", {"todos": [{"content": "batch 2000", "status": "completed"}]}, "t1"),
        tool_result("t1", "Todos have been modified successfully"),
    )
    assert claude.pre_compact().returncode == 0
    versions = claude.rows(
        "SELECT version, violations_json, state_json FROM checkpoints WHERE task_id = 'batch' ORDER BY version"
    )
    assert [(v, violations) for v, violations, _ in versions] == [(1, "[]"), (2, "[]")]  # strict, and saved
    latest = json.loads(versions[-1][2])
    assert (
        latest["pending"] == [] and latest["completed"][-1].startswith("… ") and "batch 2000" not in latest["pending"]
    )


def test_a_failing_step_of_the_worker_leaves_the_session_bound_and_the_log_says_what_failed(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    records = [user("Fix the build")]
    for i in range(20):
        records += [
            tool_use("Bash", {"command": f"make step{i}"}, f"b{i}"),
            tool_result(f"b{i}", f"step {i}\n" + "x" * 50_000),
        ]
    claude.append(*records)
    claude.prompt("Fix the build")  # the database exists; now evidence can no longer be written, as on a full disk
    with sqlite3.connect(claude.db) as conn:
        conn.execute(
            "CREATE TRIGGER full_disk BEFORE INSERT ON evidence BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
        )
    done = claude.pre_compact()
    assert done.returncode == 0
    assert claude.rows("SELECT task_id FROM sessions") == [("cc-s-1",)]  # bound before the step that failed
    assert "Fix the build" in claude.session_start("resume")
    log = claude.logged()
    assert "compressing the history failed" in log and "disk is full" in log and "unchanged" not in log
