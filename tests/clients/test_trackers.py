"""A tracker's work items as the agent last set them with the tracker's command: one it claimed and never closed is
pending at the cut, one it closed is named as closed, and a failed call changes nothing."""

from __future__ import annotations

import pytest

from ctxkeep.clients.core.injection import records_view
from ctxkeep.clients.core.trackers import is_done, status_changes
from tests.clients.test_true_lines import Session


@pytest.mark.parametrize(
    ("command", "changes"),
    [
        ("bd update spotter-gqc.6 --status in_progress 2>&1", [("spotter-gqc.6", "in_progress")]),
        ("bd update a-1 a-2 -s=blocked", [("a-1", "blocked"), ("a-2", "blocked")]),
        ('bd close a-1 a-2 --reason "shipped in 1a2b3c4" > /dev/null', [("a-1", "closed"), ("a-2", "closed")]),
        ("cd repo && bd reopen a-3; gh issue close 42", [("a-3", "open"), ("#42", "closed")]),
        ("gh issue reopen '#7'", [("#7", "open")]),
        ('jira issue move ENG-12 "In Progress"', [("ENG-12", "In Progress")]),
    ],
)
def test_status_changes_are_read_from_the_tracker_command(command: str, changes: list[tuple[str, str]]) -> None:
    assert status_changes(command) == changes


@pytest.mark.parametrize(
    "command",
    ["bd show a-1", "bd update a-1 --title 'x'", "echo bd close a-1", "gh issue view 42", "git commit -m 'bd close'",
     "bd close 'unterminated"],
)  # fmt: skip
def test_commands_that_set_no_status_change_nothing(command: str) -> None:
    assert status_changes(command) == []


def test_closed_statuses() -> None:
    assert all(is_done(s) for s in ("closed", "Done", "resolved", "completed"))
    assert not any(is_done(s) for s in ("in_progress", "open", "In Progress", "blocked"))


def test_a_claimed_item_is_pending_until_closed_and_then_named_closed() -> None:
    session = Session().user("work through the gqc tasks").bash("bd update p-gqc.5 --status in_progress")
    session.bash("bd close p-gqc.5").bash("bd update p-gqc.6 --status in_progress 2>&1")
    view = session.view()
    assert [p for p in view.pending if "p-gqc" in p] == [
        "p-gqc.6: in_progress in the tracker (set with `bd update p-gqc.6 --status in_progress 2>&1`), not closed since"
    ]
    assert view.closed_items == ["p-gqc.5"]
    shown = records_view(view, "header", 9_000)
    assert "- Work items the agent closed in the tracker: p-gqc.5" in shown and "p-gqc.6: in_progress" in shown


def test_a_failed_tracker_call_changes_nothing() -> None:
    session = Session().user("close it").bash("bd update p-1 --status in_progress")
    view = session.bash("bd close p-1", "Error: no issue found matching p-1", error=True).view()
    assert any(p.startswith("p-1: in_progress") for p in view.pending) and view.closed_items == []
