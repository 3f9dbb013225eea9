"""The handoff package of a task: its latest checkpoint and journal, arranged for a new owner (seed 003)."""

from __future__ import annotations

from ctxkeep.models.handoff import HandoffPackage
from ctxkeep.tools.checkpoint.versions import checkpoint_load
from ctxkeep.tools.scope import Scope


async def handoff(scope: Scope, task_id: str) -> HandoffPackage:
    """The package for `task_id` (latest version); raises NotFound for an unknown task."""
    loaded = await checkpoint_load(scope, task_id)
    async with scope.store.snapshot() as tx:
        actions = await tx.journal.for_task(scope.project, task_id)
    state, checks = loaded.state, loaded.resume_checks
    unsourced = [f"{f.key} = {f.value}{' ' + f.unit if f.unit else ''} (no source recorded)" for f in state.facts if not f.source_ref]
    external = [f"{a.idempotency_key}: {a.status}, external_id {a.external_id}" for a in actions if a.external_id]
    external += [f"approval {a.id}: {a.status} by {a.approver}" for a in state.approvals if a.status != "pending"]
    waiting = [a for a in state.approvals if a.status == "pending"]
    preconditions = [f"approval {a.id} ({a.action}) must be granted first" for a in waiting]
    preconditions += [f"check `{i.idempotency_key}` ({i.action} → {i.target}) in the system of record: its outcome is unknown"
                      for i in checks.open_intents]
    return HandoffPackage(
        task_id=task_id, version=loaded.version, saved_at=loaded.created_at, goal=state.goal, done_criteria=state.done_criteria,
        constraints=state.constraints, completed=state.completed, verification=state.verification_state,
        remaining=state.pending + [f"{q} (open question)" for q in state.open_questions],
        confirmed_facts=[f for f in state.facts if f.source_ref], assumptions=state.assumptions + unsourced,
        failed_approaches=state.failed_approaches, artifacts=state.evidence_refs, external_ids=external,
        open_intents=checks.open_intents, next_action=state.next_action, preconditions=preconditions,
        approvals_required=waiting, warnings=checks.warnings,
    )
