"""The resume brief: a task state as markdown a restarted agent reads first.

Deterministic: the same state and checks always render the same bytes. Order follows what a
resuming agent needs: where it stands and what it must not do before what it may do next.
"""

from __future__ import annotations

from ctxkeep.models import Approval, Fact, ResumeChecks, TaskState


def _fact_line(fact: Fact) -> str:
    unit = f" {fact.unit}" if fact.unit else ""
    source = f" (source: {fact.source_ref})" if fact.source_ref else ""
    return f"{fact.key} = {fact.value}{unit}{source}"


def _approval_line(approval: Approval) -> str:
    parts = [f"[{approval.status}] {approval.id}: {approval.action}"]
    if approval.target:
        parts.append(f"on {approval.target}")
    if approval.amount is not None:
        parts.append(f"amount {approval.amount}{' ' + approval.currency if approval.currency else ''}")
    if approval.approver:
        parts.append(f"approver {approval.approver}")
    if approval.reason:
        parts.append(f"({approval.reason})")
    return " ".join(parts)


def _section(title: str, lines: list[str]) -> list[str]:
    return [f"## {title}", *[f"- {line}" for line in lines], ""] if lines else []


def render_brief(task_id: str, version: int, state: TaskState, checks: ResumeChecks) -> str:
    """Markdown brief of one checkpoint version, warnings first."""
    header = [f"# Resume: {task_id} (v{version}, saved {checks.saved_at.isoformat()})", ""]
    if state.phase:
        header += [f"Phase: {state.phase}", ""]
    body = [
        *_section("Warnings", checks.warnings),
        *_section("Goal", [state.goal]),
        *_section("Done when", state.done_criteria),
        *_section("Constraints (must hold)", state.constraints),
        *_section("Approvals", [_approval_line(a) for a in state.approvals]),
        *_section("Pending", state.pending),
        *_section("Completed", state.completed),
        *_section("Plan", state.plan),
        *_section("Decisions", state.decisions),
        *_section("Facts (exact)", [_fact_line(f) for f in state.facts]),
        *_section("Assumptions (unverified)", state.assumptions),
        *_section("Failed approaches (do not retry)", [f"{f.approach}: {f.reason}" for f in state.failed_approaches]),
        *_section("Open questions", state.open_questions),
        *_section("Dropped", [f"{d.kind}: {d.item} ({d.reason})" for d in state.dropped]),
        *_section("Verification", [state.verification_state] if state.verification_state else []),
        *_section("Evidence", state.evidence_refs),
        *_section("Next action", [state.next_action] if state.next_action else []),
    ]
    return "\n".join(header + body).rstrip() + "\n"
