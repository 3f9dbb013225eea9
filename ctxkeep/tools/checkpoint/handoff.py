"""The handoff package of a task: its latest checkpoint and journal, arranged for a new owner (seed 003)."""

from __future__ import annotations

import re

from ctxkeep.models.checkpoint import Approval
from ctxkeep.models.handoff import HandoffPackage
from ctxkeep.tools.checkpoint.versions import checkpoint_load
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.shared.search_terms import query_terms


def concerns(approval: Approval, next_action: str | None) -> bool:
    """Whether the next action needs this approval: it names the approval's id, or most words of its action (stemmed:
    "Issue the purchase order" needs "issue purchase order"; "Compare landed cost" does not)."""
    if not next_action:
        return False
    if re.search(rf"(?<!\w){re.escape(approval.id)}(?!\w)", next_action, re.IGNORECASE):
        return True
    wanted, said = set(query_terms(approval.action)), set(query_terms(next_action))
    return bool(wanted) and len(wanted & said) * 2 > len(wanted)


async def handoff(scope: Scope, task_id: str) -> HandoffPackage:
    """The package for `task_id` (latest version); raises NotFound for an unknown task."""
    loaded = await checkpoint_load(scope, task_id)
    async with scope.store.snapshot() as tx:
        actions = await tx.journal.for_task(scope.project, task_id)
    state, checks = loaded.state, loaded.resume_checks
    unsourced = [
        f"{f.key} = {f.value}{' ' + f.unit if f.unit else ''} (no source recorded)"
        for f in state.facts
        if not f.source_ref
    ]
    external = [f"{a.idempotency_key}: {a.status}, external_id {a.external_id}" for a in actions if a.external_id]
    external += [f"approval {a.id}: {a.status} by {a.approver}" for a in state.approvals if a.status != "pending"]
    waiting = [a for a in state.approvals if a.status == "pending"]
    # an approval for another action is listed in approvals_required (and warned about), not attached to this step
    preconditions = [
        f"approval {a.id} ({a.action}) must be granted first" for a in waiting if concerns(a, state.next_action)
    ]
    preconditions += [
        f"check `{i.idempotency_key}` ({i.action} → {i.target}) in the system of record: its outcome is unknown"
        for i in checks.open_intents
    ]
    return HandoffPackage(
        task_id=task_id,
        version=loaded.version,
        saved_at=loaded.created_at,
        goal=state.goal,
        done_criteria=state.done_criteria,
        constraints=state.constraints,
        completed=state.completed,
        verification=state.verification_state,
        remaining=state.pending + [f"{q} (open question)" for q in state.open_questions],
        confirmed_facts=[f for f in state.facts if f.source_ref],
        assumptions=state.assumptions + unsourced,
        failed_approaches=state.failed_approaches,
        artifacts=state.evidence_refs,
        external_ids=external,
        open_intents=checks.open_intents,
        next_action=state.next_action,
        preconditions=preconditions,
        approvals_required=waiting,
        warnings=checks.warnings,
    )
