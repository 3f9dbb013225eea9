"""The Stop gate blocks only when no test or check ran after the last edit: a test command run again with the same
text and outcome counts when it ran last, not when it first ran."""

from __future__ import annotations

from pathlib import Path

from tests.claude_home import Claude


def _edit(claude: Claude, use_id: str) -> None:
    edit = {"file_path": str(claude.project / "app.py"), "old_string": "a", "new_string": "b"}
    claude.post_tool_use("Edit", edit, {"filePath": edit["file_path"]}, use_id=use_id)


def _test(claude: Claude, use_id: str) -> None:
    output = {"stdout": "4 passed in 0.2s", "stderr": "", "interrupted": False}
    claude.post_tool_use("Bash", {"command": "pytest -q"}, output, use_id=use_id)


def test_the_same_test_run_again_after_an_edit_verifies_it(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.prompt("Fix the login bug")
    _edit(claude, "t1")
    _test(claude, "t2")
    assert claude.stop() is None
    _edit(claude, "t3")
    _test(claude, "t4")  # the same command, the same output: it counts as run now
    assert claude.stop() is None


def test_an_edit_after_the_last_test_blocks_once(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.prompt("Fix the login bug")
    _edit(claude, "t1")
    _test(claude, "t2")
    _edit(claude, "t3")
    blocked = claude.stop()
    assert blocked is not None and blocked["decision"] == "block" and "app.py" in blocked["reason"]
    assert claude.stop(active=True) is None  # never twice in a row
