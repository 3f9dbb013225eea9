"""The handoff document: a task handed to another agent or person, from its handoff package.

Sections in the order a new owner needs them (seed 003): goal and done criteria, what is
completed and how it was verified, what remains by priority, confirmed facts apart from
assumptions, artifacts and external ids, side effects whose outcome is unknown, and the next
action with its preconditions and the approvals it waits for.
"""

from __future__ import annotations

from ctxkeep.models.handoff import HandoffPackage
from ctxkeep.tools.checkpoint import Section, within_budget


def handoff_text(package: HandoffPackage) -> str:
    """The handoff document in markdown, abridged to fit 6,000 tokens."""
    return within_budget(lambda section: _handoff(package, section))


def _handoff(p: HandoffPackage, section: Section) -> str:
    def _lines(title: str, items: list[str]) -> list[str]:
        return section(title, items) or [f"## {title}", "- (none)", ""]

    verified = f" (verification: {p.verification})" if p.verification else ""
    return (
        "\n".join(
            [
                f"# Handoff: {p.task_id} (checkpoint v{p.version}, {p.saved_at.isoformat()})",
                "",
                *section("Warnings", p.warnings),
                *_lines("Goal", [p.goal]),
                *_lines("Done when", p.done_criteria),
                *_lines("Constraints (must hold)", p.constraints),
                *_lines(f"Completed{verified}", p.completed),
                *_lines("Remaining, in priority order", p.remaining),
                *_lines("Confirmed facts (exact, with sources)", [f.line() for f in p.confirmed_facts]),
                *_lines("Assumptions (not verified)", p.assumptions),
                *_lines("Failed approaches (do not retry)", [f"{f.approach}: {f.reason}" for f in p.failed_approaches]),
                *_lines("Artifacts and external ids", p.artifacts + p.external_ids),
                *section(
                    "Open side effects (outcome unknown: look each key up in the system of record before retrying)",
                    [f"{i.idempotency_key}: {i.action} → {i.target}" for i in p.open_intents],
                ),
                *_lines(
                    "Next action", [p.next_action or "(not recorded)"] + [f"precondition: {c}" for c in p.preconditions]
                ),
            ]
        ).rstrip()
        + "\n"
    )
