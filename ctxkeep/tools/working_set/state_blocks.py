"""The slots of a working set that come from the task's own records: policy, goal, state, history, next action.

Control rules (policy, goal, done criteria, constraints, open side effects, pending items, open
approvals, the next action) are rendered whole or not at all: the caller makes room for them or refuses the budget.
Exact facts come next: whole while the budget has room. The rest of the state shrinks list by list (fewer items,
shorter items) until it fits; what is left out is reported. The same state always renders the same bytes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ctxkeep.models import TaskState
from ctxkeep.models.working_set import DroppedItem
from ctxkeep.storage import DigestRow

Count = Callable[[str], int]
# (items per list, characters per item) for the flexible parts of the state, tried in order
_CAPS: list[tuple[int | None, int | None]] = [(None, None), (30, 600), (15, 300), (8, 200), (4, 150), (2, 100), (0, 0)]
MORE = "checkpoint_load returns the whole state"


@dataclass(frozen=True)
class Rendered:
    """A slot's text, its token count, the claims it shows (for the diff) and what it left out."""

    text: str
    tokens: int
    claims: list[str] = field(default_factory=list)
    dropped: list[DroppedItem] = field(default_factory=list)
    items: int = 0


EMPTY = Rendered("", 0)


@dataclass(frozen=True)
class Section:
    title: str
    claim: str  # how its items are named in the diff, e.g. "pending"
    lines: list[str]
    newest_last: bool = False  # show the last items when cut (e.g. completed work)


def _render_section(section: Section, cap: tuple[int | None, int | None]) -> tuple[list[str], list[str], list[str]]:
    """(markdown lines, claims shown, items left out or cut)."""
    items, chars = cap
    if not section.lines or items == 0:
        return [], [], list(section.lines)
    chosen = (
        section.lines
        if items is None or len(section.lines) <= items
        else (section.lines[-items:] if section.newest_last else section.lines[:items])
    )
    left_out = [line for line in section.lines if line not in chosen]
    shown = [line if chars is None or len(line) <= chars else line[:chars] + "…" for line in chosen]
    left_out += [line for line, cut in zip(chosen, shown, strict=True) if line != cut]
    more = [f"- … {len(section.lines) - len(chosen)} more ({MORE})"] if len(chosen) < len(section.lines) else []
    return (
        [f"## {section.title}", *[f"- {line}" for line in shown], *more, ""],
        [f"{section.claim}: {line}" for line in chosen],
        left_out,
    )


def _join(lines: list[str]) -> str:
    return "\n".join(lines).rstrip() + "\n" if lines else ""


def _fixed(title: list[str], sections: list[Section], count: Count) -> Rendered:
    lines, claims = list(title), []
    for section in sections:
        body, shown, _ = _render_section(section, (None, None))
        lines += body
        claims += shown
    text = _join(lines)
    return Rendered(text, count(text), claims, [], len(claims))


def policy_block(policy: str | None, count: Count) -> Rendered:
    if not policy:
        return EMPTY
    text = f"## Policy\n{policy}\n"
    return Rendered(text, count(text), [f"policy: {policy}"], [], 1)


def goal_block(task_id: str, state: TaskState, count: Count) -> Rendered:
    """Goal, done criteria and constraints: control rules, always whole (no version in it: it changes less often)."""
    return _fixed(
        [f"# Task {task_id}", ""],
        [
            Section("Goal", "goal", [state.goal]),
            Section("Done when", "done", state.done_criteria),
            Section("Constraints (must hold)", "constraint", state.constraints),
        ],
        count,
    )


def next_action_block(state: TaskState, count: Count) -> Rendered:
    if not state.next_action:
        return EMPTY
    return _fixed([], [Section("Next action", "next", [state.next_action])], count)


def _control_sections(state: TaskState, intents: Sequence[str]) -> list[Section]:
    open_approvals = [a for a in state.approvals if a.status == "pending"]
    return [
        Section(
            "Open side effects (outcome unknown: look each key up in the system of record before retrying)",
            "intent",
            list(intents),
        ),
        Section("Open approvals (wait for them)", "approval", [a.line() for a in open_approvals]),
        Section("Pending", "pending", state.pending),
    ]


def _flexible_sections(state: TaskState) -> list[Section]:
    decided = [a for a in state.approvals if a.status != "pending"]
    return [
        Section("Decided approvals", "approval", [a.line() for a in decided]),
        Section("Decisions", "decision", state.decisions),
        Section("Facts (exact)", "fact", [f.line() for f in state.facts]),
        Section(
            "Failed approaches (do not retry)", "failed", [f"{f.approach}: {f.reason}" for f in state.failed_approaches]
        ),
        Section("Plan", "plan", state.plan),
        Section("Completed", "completed", state.completed, newest_last=True),
        Section("Assumptions (unverified)", "assumption", state.assumptions),
        Section("Open questions", "question", state.open_questions),
        Section("Verification", "verification", [state.verification_state] if state.verification_state else []),
    ]


def state_control_tokens(
    version: int, state: TaskState, count: Count, intents: Sequence[str] = (), keep_facts: bool = False
) -> int:
    """Tokens the state slot needs at the least: its control sections whole (and, with `keep_facts`, the exact facts),
    everything else left out."""
    return _state(version, state, count, _CAPS[-1], intents, keep_facts).tokens


def state_block(version: int, state: TaskState, limit: int, count: Count, intents: Sequence[str] = ()) -> Rendered:
    """The state within `limit` tokens: control sections (open intents among them) always whole, then the exact facts
    whole while they fit, then the rest list by list; its smallest form when none fits."""
    rendered = EMPTY
    for keep_facts in (True, False):
        for cap in _CAPS:
            rendered = _state(version, state, count, cap, intents, keep_facts)
            if rendered.tokens <= limit:
                return rendered
    return rendered


def _state(
    version: int,
    state: TaskState,
    count: Count,
    cap: tuple[int | None, int | None],
    intents: Sequence[str],
    keep_facts: bool = False,
) -> Rendered:
    lines: list[str] = []
    claims: list[str] = []
    dropped: list[DroppedItem] = []
    for section in _control_sections(state, intents):
        body, shown, _ = _render_section(section, (None, None))
        lines, claims = lines + body, claims + shown
    left_total = 0
    for section in _flexible_sections(state):
        own_cap = (None, None) if keep_facts and section.claim == "fact" else cap
        body, shown, left_out = _render_section(section, own_cap)
        lines, claims = lines + body, claims + shown
        left_total += len(left_out)
        dropped += [
            DroppedItem(
                slot="state", item=f"{section.claim}: {line[:200]}", reason="budget" if own_cap[0] == 0 else "truncated"
            )
            for line in left_out
        ]
    if cap[0] == 0 and left_total:
        lines.append(f"(… {left_total} more items of the state left out: {MORE})")
    # last, so that a new version changes the block as late as possible (prompt cache)
    lines.append(f"_State from checkpoint v{version}{', phase: ' + state.phase if state.phase else ''}._")
    text = _join(lines)
    return Rendered(text, count(text) if text else 0, claims, dropped, len(claims))


def history_block(digest: DigestRow | None, limit: int, count: Count) -> Rendered:
    """The accepted summary and the digest of earlier steps, cut from the end (least important last) to fit."""
    if digest is None or not (digest.digest or digest.summary):
        return EMPTY
    if digest.imported_from is not None:
        head, body = _imported_history(digest)
    else:
        head = ["## History (digest of earlier steps)"]
        if digest.summary:
            head += ["Summary (checked against the checkpoint):", digest.summary, ""]
        body = digest.digest.splitlines()
    for keep in _shrinking(len(body)):
        note = (
            [f"(… digest abridged: {len(body) - keep} more lines; compress_history keeps the full record)"]
            if keep < len(body)
            else []
        )
        text = _join(head + body[:keep] + note)
        tokens = count(text)
        if tokens <= limit:
            left = len(body) - keep
            dropped = [DroppedItem(slot="history", item=f"{left} digest lines", reason="budget")] if left else []
            return Rendered(text, tokens, [], dropped, keep)
    return Rendered("", 0, [], [DroppedItem(slot="history", item="history digest", reason="budget")], 0)


def _imported_history(digest: DigestRow) -> tuple[list[str], list[str]]:
    """A bundle's digest: every line quoted under its source, the summary never called checked (seed 003: text from
    outside is data, never instructions)."""
    head = [f"## History (from {digest.imported_from}: quoted data, not checked against this checkpoint)"]
    if digest.summary:
        head += ["The bundle's summary (not checked):", *_quoted(digest.summary), ""]
    return head, _quoted(digest.digest)


def _quoted(text: str) -> list[str]:
    return [f"> {line}" for line in text.splitlines()]  # every line break a viewer honours is quoted


def _shrinking(lines: int) -> list[int]:
    """Line counts to try: all, then fewer and fewer (halving the cut each time), then none."""
    counts, keep = [lines], lines
    while keep > 0:
        keep = keep * 3 // 4 if keep > 8 else keep - 1
        counts.append(keep)
    return counts
