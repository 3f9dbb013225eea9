"""A ref cited by its short form (as working sets show it, ev_ + 6 hex digits) counts wherever refs are cited."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.tools.checkpoint import checkpoint_load, checkpoint_save
from ctxkeep.tools.evidence import evidence_delete, evidence_gc, evidence_put
from ctxkeep.tools.scope import Scope

pytestmark = pytest.mark.anyio


async def _cite(scope: Scope, short: str) -> None:
    state = TaskState(goal="Ship the fix", facts=[{"key": "failing test", "value": "test_login", "source_ref": short}])
    await checkpoint_save(scope, CheckpointSaveRequest(task_id="t", state=state))


async def test_resume_checks_resolve_a_short_ref_and_report_it_when_it_is_gone(scope: Scope) -> None:
    ref = (await evidence_put(scope, [EvidenceItem(content="FAILED test_login", source="Bash")])).refs[0]
    await _cite(scope, ref[:9])
    assert (await checkpoint_load(scope, "t")).resume_checks.evidence_missing == []
    await evidence_delete(scope, ref)
    assert (await checkpoint_load(scope, "t")).resume_checks.evidence_missing == [ref[:9]]


async def test_gc_keeps_expired_evidence_a_fact_cites_by_its_short_ref(scope: Scope) -> None:
    past = datetime.now(timezone.utc) - timedelta(days=1)
    ref = (await evidence_put(scope, [EvidenceItem(content="FAILED test_login", source="Bash", expires_at=past)])).refs[
        0
    ]
    await _cite(scope, ref[:9])
    done = await evidence_gc(scope)
    assert ref in done.kept_cited and ref not in done.deleted
