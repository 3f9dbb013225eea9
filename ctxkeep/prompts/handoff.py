"""The `handoff` prompt: a task handed to another agent or person, built from its checkpoint.

Sections in the order a new owner needs them (seed 003): goal and done criteria, what is
completed and how it was verified, what remains, facts (exact, with sources) apart from
assumptions, artifacts and external ids, and the next action with its preconditions and the
approvals it waits for.
"""

from __future__ import annotations

from ctxkeep.models import CheckpointLoadResult
from ctxkeep.tools.brief import Section, within_budget
from ctxkeep.tools.journal import describe


def handoff_text(loaded: CheckpointLoadResult) -> str:
    """The handoff document, abridged to fit 6,000 tokens."""
    return within_budget(lambda section: _handoff(loaded, section))


def _handoff(loaded: CheckpointLoadResult, section: Section) -> str:
    def _lines(title: str, items: list[str]) -> list[str]:
        return section(title, items) or [f"## {title}", "- (none)", ""]

    state = loaded.state
    facts = [f"{f.key} = {f.value}{' ' + f.unit if f.unit else ''} (source: {f.source_ref or 'not recorded'})" for f in state.facts]
    approvals = [f"{a.id}: {a.action} — {a.status}{' by ' + a.approver if a.approver else ''}" for a in state.approvals]
    waiting = [a for a in state.approvals if a.status == "pending"]
    preconditions = [f"approval {a.id} ({a.action}) must be granted first" for a in waiting]
    verified = f" (verification: {state.verification_state})" if state.verification_state else ""
    return "\n".join([
        f"# Handoff: {loaded.task_id} (checkpoint v{loaded.version}, {loaded.created_at.isoformat()})", "",
        *_lines("Goal", [state.goal]),
        *_lines("Done when", state.done_criteria),
        *_lines("Constraints (must hold)", state.constraints),
        *_lines(f"Completed{verified}", state.completed),
        *_lines("Remaining, in priority order", state.pending + [q + " (open question)" for q in state.open_questions]),
        *_lines("Facts (exact, with sources)", facts),
        *_lines("Assumptions (not verified)", state.assumptions),
        *_lines("Failed approaches (do not retry)", [f"{f.approach}: {f.reason}" for f in state.failed_approaches]),
        *_lines("Artifacts and external ids", state.evidence_refs + approvals),
        *section("Open side effects (outcome unknown: look each key up in the system of record before retrying)",
                 [describe(intent) for intent in loaded.resume_checks.open_intents]),
        *_lines("Next action", [state.next_action or "(not recorded)"] + [f"precondition: {p}" for p in preconditions]),
    ]).rstrip() + "\n"
