"""A handoff's next action carries only the preconditions that concern it: an approval waiting for another action is
listed among the approvals, not attached to the next step."""

from __future__ import annotations

import pytest

from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.prompts import handoff_text
from ctxkeep.tools.checkpoint import checkpoint_save, handoff
from ctxkeep.tools.scope import Scope
from tests.conftest import procurement_state

pytestmark = pytest.mark.anyio


async def _handoff_for(scope: Scope, next_action: str | None) -> tuple[list[str], str]:
    state = TaskState.model_validate(procurement_state(next_action=next_action))
    await checkpoint_save(scope, CheckpointSaveRequest(task_id="proc", state=state))
    package = await handoff(scope, "proc")
    return package.preconditions, handoff_text(package)


async def test_an_approval_for_another_action_is_not_a_precondition_of_the_next_action(scope: Scope) -> None:
    preconditions, text = await _handoff_for(scope, "Compare landed cost across all 20 suppliers")
    assert preconditions == []
    assert "precondition" not in text
    assert "approval PO-1 is pending" in text  # still said, as a warning, and listed as required
    assert "PO-1" in text.split("## Next action")[0]


@pytest.mark.parametrize(
    "next_action",
    ["Issue the purchase order to Supplier A", "Send PO-1 to the winning supplier", "issue purchase order"],
)
async def test_an_approval_the_next_action_needs_stays_its_precondition(scope: Scope, next_action: str) -> None:
    preconditions, text = await _handoff_for(scope, next_action)
    assert preconditions == ["approval PO-1 (issue purchase order) must be granted first"]
    assert "precondition: approval PO-1 (issue purchase order) must be granted first" in text


async def test_without_a_next_action_no_approval_is_a_precondition(scope: Scope) -> None:
    preconditions, _ = await _handoff_for(scope, None)
    assert preconditions == []
