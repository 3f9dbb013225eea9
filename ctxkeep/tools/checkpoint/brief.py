"""The resume brief: a task state as markdown a restarted agent reads first.

Deterministic: the same state and checks always render the same bytes. Order follows what a
resuming agent needs: where it stands and what it must not do before what it may do next.
"""

from __future__ import annotations

from collections.abc import Callable

from ctxkeep.models import ResumeChecks, TaskState
from ctxkeep.tokens import count_tokens

BRIEF_TOKENS = 6_000
# (items per list, characters per item): tried in order until the text fits its budget
_CAPS: list[tuple[int | None, int | None]] = [
    (None, None),
    (50, 1_000),
    (20, 500),
    (10, 300),
    (5, 200),
    (2, 120),
    (1, 80),
]


Section = Callable[[str, list[str]], list[str]]


def section_maker(items: int | None, chars: int | None) -> Section:
    """A markdown list renderer that shows at most `items` entries of at most `chars` characters each."""

    def section(title: str, lines: list[str]) -> list[str]:
        if not lines:
            return []
        shown = [line if chars is None or len(line) <= chars else line[:chars] + "…" for line in lines[:items]]
        more = (
            [f"… {len(lines) - len(shown)} more (checkpoint_load returns the whole state)"]
            if len(shown) < len(lines)
            else []
        )
        return [f"## {title}", *[f"- {line}" for line in shown + more], ""]

    return section


def within_budget(render: Callable[[Section], str], budget: int = BRIEF_TOKENS) -> str:
    """The first rendering, from complete to most abridged, that fits `budget` tokens."""
    text = ""
    for items, chars in _CAPS:
        text = render(section_maker(items, chars))
        if count_tokens(text) <= budget:
            return text
    return text


def render_brief(task_id: str, version: int, state: TaskState, checks: ResumeChecks) -> str:
    """Markdown brief of one checkpoint version, warnings first, abridged to fit 6,000 tokens."""
    return within_budget(lambda section: _brief(task_id, version, state, checks, section))


def _brief(task_id: str, version: int, state: TaskState, checks: ResumeChecks, _section: Section) -> str:
    header = [f"# Resume: {task_id} (v{version}, saved {checks.saved_at.isoformat()})", ""]
    if state.phase:
        header += [f"Phase: {state.phase}", ""]
    body = [
        *_section("Warnings", checks.warnings),
        *_section("Goal", [state.goal]),
        *_section("Done when", state.done_criteria),
        *_section("Constraints (must hold)", state.constraints),
        *_section("Approvals", [a.line() for a in state.approvals]),
        *_section("Pending", state.pending),
        *_section("Completed", state.completed),
        *_section("Plan", state.plan),
        *_section("Decisions", state.decisions),
        *_section("Facts (exact)", [f.line() for f in state.facts]),
        *_section("Assumptions (unverified)", state.assumptions),
        *_section("Failed approaches (do not retry)", [f"{f.approach}: {f.reason}" for f in state.failed_approaches]),
        *_section("Open questions", state.open_questions),
        *_section("Dropped", [f"{d.kind}: {d.item} ({d.reason})" for d in state.dropped]),
        *_section("Verification", [state.verification_state] if state.verification_state else []),
        *_section("Evidence", state.evidence_refs),
        *_section("Next action", [state.next_action] if state.next_action else []),
    ]
    return "\n".join(header + body).rstrip() + "\n"
