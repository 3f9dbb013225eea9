"""TaskState: trimming, in-order deduplication, uniqueness of keys and ids, values JSON can carry."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from ctxkeep.models import CheckpointSaveRequest, TaskState


def test_strings_are_trimmed_and_list_items_deduplicated_in_order() -> None:
    state = TaskState(goal="  Compare quotes \n", pending=["B", " a ", "A", "b", "c"])
    assert state.goal == "Compare quotes"
    assert state.pending == ["B", "a", "c"]


def test_fact_keys_and_approval_ids_are_unique() -> None:
    with pytest.raises(ValidationError, match="two facts share the key"):
        TaskState(goal="g", facts=[{"key": "freight", "value": 1}, {"key": "Freight", "value": 2}])
    with pytest.raises(ValidationError, match="two approvals share the id"):
        TaskState(goal="g", approvals=[{"id": "PO-1", "action": "a"}, {"id": "po-1", "action": "b"}])


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_numbers_json_cannot_carry_are_refused(bad: float) -> None:
    with pytest.raises(ValidationError, match="NaN or Infinity"):
        TaskState(goal="g", extra={"x": [bad]})
    with pytest.raises(ValidationError, match="finite number"):
        TaskState(goal="g", approvals=[{"id": "A", "action": "pay", "amount": bad}])
    with pytest.raises(ValidationError, match="finite number"):
        TaskState(goal="g", facts=[{"key": "k", "value": bad}])


def test_a_naive_time_means_utc() -> None:
    state = TaskState(goal="g", approvals=[{"id": "A", "action": "pay", "requested_at": "2026-11-30T10:00:00"}])
    assert state.approvals[0].requested_at is not None
    assert state.approvals[0].requested_at.utcoffset() is not None
    assert state.canonical().count("2026-11-30T10:00:00Z") == 1


@pytest.mark.parametrize(
    "char",
    ["\u202e", "\u202d", "\u2066", "\u200b", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u061c", "\n", "\t", "\u2028"],
)
def test_task_ids_that_could_be_spoofed_are_refused(char: str) -> None:
    with pytest.raises(ValidationError, match=f"U\\+{ord(char):04X}"):
        CheckpointSaveRequest(task_id=f"deploy{char}prod", state=TaskState(goal="g"))


def test_task_ids_in_any_script_are_accepted() -> None:
    for task_id in ("fix-login-bug", "任务-42", "Überweisung 7", "cc-0b1e2f3a-4c5d"):
        assert CheckpointSaveRequest(task_id=task_id, state=TaskState(goal="g")).task_id == task_id
