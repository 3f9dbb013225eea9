"""A recorded working set keeps the account of what it delivered (each slot's tokens, the evidence and memories shown,
no rendered text), read back for people; a preview (record=False) changes nothing; older rows have no account."""

from __future__ import annotations

import json

import pytest

from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.models.working_set import WorkingSetRequest
from ctxkeep.storage import WorkingSetRow
from ctxkeep.tools.checkpoint import checkpoint_save
from ctxkeep.tools.evidence import evidence_put
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.working_set import build_working_set, delivered
from tests.conftest import PROJECT, procurement_state

pytestmark = pytest.mark.anyio


async def _row(scope: Scope, task_id: str) -> WorkingSetRow | None:
    async with scope.store.snapshot() as tx:
        return await tx.working_sets.get(PROJECT, task_id)


async def test_the_stored_working_set_says_what_each_slot_delivered(scope: Scope) -> None:
    await checkpoint_save(
        scope, CheckpointSaveRequest(task_id="proc", state=TaskState.model_validate(procurement_state()))
    )
    await evidence_put(scope, [EvidenceItem(content="Freight: 0.48 USD/piece, DAP Rotterdam", task_id="proc")])
    built = await build_working_set(
        scope, WorkingSetRequest(task_id="proc", budget_tokens=1_200, focus="Supplier C freight")
    )
    row = await _row(scope, "proc")
    assert row is not None
    shown = delivered(row)
    assert shown is not None
    assert [(b.slot, b.tokens, b.items) for b in shown.blocks] == [(b.slot, b.tokens, b.items) for b in built.blocks]
    assert (shown.budget_tokens, shown.tokens_total, shown.version, shown.focus) == (
        1_200,
        built.tokens_total,
        1,
        "Supplier C freight",
    )
    assert shown.evidence_refs == built.evidence_refs and shown.evidence_refs
    assert any(line.startswith("goal: ") for line in shown.state_lines)
    assert "0.48 USD/piece, DAP" not in row.selection_json  # an account, not the rendered text
    again = await build_working_set(
        scope, WorkingSetRequest(task_id="proc", budget_tokens=1_200, focus="Supplier C freight")
    )
    assert again.evidence_refs == built.evidence_refs  # the picks stay sticky with the account beside them


async def test_a_preview_leaves_the_delivered_account_as_it_was(scope: Scope) -> None:
    await checkpoint_save(
        scope, CheckpointSaveRequest(task_id="proc", state=TaskState.model_validate(procurement_state()))
    )
    await build_working_set(scope, WorkingSetRequest(task_id="proc", budget_tokens=1_200))
    before = await _row(scope, "proc")
    await build_working_set(scope, WorkingSetRequest(task_id="proc", budget_tokens=5_000), record=False)
    assert await _row(scope, "proc") == before


def test_a_row_stored_before_the_account_existed_has_none() -> None:
    old = WorkingSetRow(
        "proc", "freight", json.dumps({"limit": 900, "picks": []}), "[]", "null", "2026-01-01T00:00:00Z"
    )
    assert delivered(old) is None
    assert delivered(WorkingSetRow("proc", "f", "not json", "[]", "null", "2026-01-01T00:00:00Z")) is None
