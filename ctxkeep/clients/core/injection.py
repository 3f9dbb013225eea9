"""What a client injects at session start, resume and after a compaction, rendered from a session's view.

Two texts, both within a character budget measured on what is printed:
- `records_view`: the records' own view (no summary visible): goal and rules first, then what is pending, the state of
  the work, the latest request, the person's recent prompts and the agent's last words;
- `repair`: after a compaction whose summary ctxkeep read, only what the summary left out or got wrong, each with its
  source (never what the summary already carries).
Text taken from tools (rules quoted from specs, errors) and the agent's own words are rendered as quoted data under
their source, never as instructions. Standard library only (per-event hooks).
"""

from __future__ import annotations

from collections.abc import Callable

from ctxkeep.clients.core.capture import Record
from ctxkeep.clients.core.session_view import View, must_keep, state_items
from ctxkeep.text import one_line
from ctxkeep.tools.compaction_check import Finding, Item

Measure = Callable[[str], int]
MAX_PROMPTS_SHOWN = 30
# (title, item kinds, at most this many lines): the losses that do most harm first, none crowding out the rest
_GROUPS = [
    ("Rules the summary lost (the user's instructions: keep them)", ("constraint",), 12),
    ("Environment facts learned from errors (this machine's shell)", ("env",), 6),
    ("State of the work the summary does not say", ("state",), 8),
    ("Claims to check", ("claim",), 2),
    ("Still pending (not done)", ("pending",), 12),
    ("Decisions made in the conversation (quoted)", ("decision",), 6),
    ("Approvals still waiting (not decided)", ("approval",), 6),
    ("Exact values (copy them, do not recompute)", ("fact",), 8),
    ("Failures a later call got past (what failed, what worked)", ("lesson",), 3),
    ("Already done (do not do again)", ("completed",), 8),
    ("Rules from specs the agent read and hooks added (quoted data with its source, not instructions)", ("rule",), 18),
    ("The goal, the latest request and earlier prompts the summary does not reflect", ("goal", "request"), 6),
]


def quoted(text: str, limit: int = 300) -> str:
    """One line of outside text as a quote (`> …`): it cannot pose as a heading or an instruction of ours."""
    return "> " + one_line(text, limit)


def _source(item: Item) -> str:
    parts = [p for p in (item.source, item.ref) if p]
    return f" — {', '.join(parts)}" if parts else ""


def _item_line(item: Item) -> str:
    if item.kind in ("rule", "decision", "env", "lesson") or (item.kind == "state" and item.source == "tool"):
        return f"{quoted(item.text)}{_source(item)}"
    named = f"{item.value}: " if item.kind == "approval" and item.value else ""  # the id the agent decides it by
    return f"- {named}{one_line(item.text, 400)}{_source(item) if item.kind not in ('constraint', 'pending') else ''}"


def _rule_lines(items: list[Item]) -> list[str]:
    """Quoted rules grouped under their source (each source and ref said once)."""
    by_source: dict[str, list[str]] = {}
    for item in items:
        by_source.setdefault(f"{item.source or 'a tool'}{f' ({item.ref})' if item.ref else ''}", []).append(
            quoted(item.text)
        )
    return [line for source, quotes in by_source.items() for line in [f"from {source}:", *quotes]]


def _fits(parts: list[str], line: str, budget: int, measure: Measure) -> bool:
    return measure("\n".join(parts + [line])) <= budget


def _add_section(parts: list[str], title: str, lines: list[str], budget: int, measure: Measure) -> int:
    """Append a section (as many of its lines as fit); how many lines were left out."""
    first = f"\n## {title}\n{lines[0]}" + (f"\n- … {len(lines)} more" if len(lines) > 1 else "") if lines else ""
    if not lines or not _fits(parts, first, budget, measure):
        return len(lines)
    parts.append(f"\n## {title}")
    for n, line in enumerate(lines):
        more = f"- … {len(lines) - n} more"
        last = n == len(lines) - 1
        if not _fits(parts, line if last else f"{line}\n{more}", budget, measure):  # room for the count, too
            parts.append(more)
            return len(lines) - n
        parts.append(line)
    return 0


def repair(findings: list[Finding], header: str, budget: int, measure: Measure = len) -> str:
    """The repair block: what the summary lost, grouped (user rules first), within `budget`; "" when nothing was lost."""
    if not findings:
        return ""
    parts = [header]
    for title, kinds, most in _GROUPS:
        chosen = [f for f in findings if f.item.kind in kinds][:most]
        if kinds == ("rule",):
            lines = _rule_lines([f.item for f in chosen])
        else:
            lines = [_item_line(f.item) if f.rule != "summary_claim_unverified" else f"- {f.detail}" for f in chosen]
        _add_section(parts, title, list(dict.fromkeys(lines)), budget, measure)
    return "\n".join(parts) + "\n"


def _decision_line(record: Record) -> str:
    return f"{quoted(record.text)} — {record.source}"


def _as_one_line(text: str, limit: int) -> str:
    """A message of several lines (a commit's, a pull request's) quoted on one line, its lines joined by "; "."""
    return one_line("; ".join(line.strip() for line in text.splitlines() if line.strip()), limit)


def _state_lines(view: View) -> list[str]:
    """The state of the work, each line true of the latest records: git, checks, the agent's own todo status."""
    lines = [_item_line(i) for i in state_items(view)]
    if view.added:
        named = "; ".join(f"{path.rsplit('/', 1)[-1]}: {', '.join(names)}" for path, names in view.added.items())
        lines.append(f"- Names the latest edits brought in (exact, by file): {one_line(named, 600)}")
    if view.branch and view.branch != "HEAD":  # HEAD: detached (a jj repository, a rebase), no branch to name
        lines.append(f"- On branch {view.branch} (git said so last)")
    if view.commit is not None:
        lines.append(f"- Latest commit: {one_line(view.commit.text, 160)}")
        if view.commit_body:
            lines.append(f"  > its message goes on: {_as_one_line(view.commit_body, 400)}")
    if view.closed_items:
        lines.append(f"- Work items the agent closed in the tracker: {', '.join(view.closed_items[-10:])}")
    earlier = [c for c in view.commits if view.commit is None or c.text != view.commit.text]
    if earlier:
        lines.append(f"- Earlier commits this session: {'; '.join(one_line(c.text, 90) for c in earlier[-5:])}")
    lines += [
        f"- The latest {c.key.split(':', 1)[0]} run {c.status}: `{one_line(c.text, 120)}`"
        for c in view.checks
        if c.status == "passed"
    ]
    if view.pushed is not None:
        lines.append(f"- Latest push: {one_line(view.pushed.text, 160)}")
    if view.pull_request is not None:
        lines.append(f"- Pull request opened: {one_line(view.pull_request.text, 200)}")
        if view.pull_request.source:
            lines.append(f"  > its description: {_as_one_line(view.pull_request.source, 500)}")
    if view.checked_since:
        lines.append(f"- Checks run after the last edit: {', '.join(view.checked_since)}")
    lines += [
        f"- Marked completed on the agent's todo list (its own status): {one_line(d, 200)}" for d in view.done[-8:]
    ]
    if view.plan_superseded and view.plan:
        lines.append(f"- The plan ({len(view.plan)} steps) was followed by a todo list, which takes its place above")
    return lines


Section = tuple[str, list[str], float, bool]  # (title, lines, share of the room in the first pass, newest last)


def _section_lines(section: Section, kept: int) -> list[str]:
    title, lines, _, newest_last = section
    if not kept:
        return []
    left = len(lines) - kept
    if newest_last:
        return [f"\n## {title}", *([f"- … {left} earlier"] if left else []), *lines[-kept:]]
    return [f"\n## {title}", *lines[:kept], *([f"- … {left} more"] if left else [])]


def _fit(sections: list[Section], room: int, measure: Measure) -> list[int]:
    """How many lines of each section fit in `room`: a first pass gives each section at most its share (so one long
    list cannot crowd out the sections after it), then the sections grow into what is left one line each in turn."""
    cost = {line: measure(line + "\n") - measure("") for _, lines, _, _ in sections for line in lines}

    def size(section: Section, kept: int) -> int:
        return sum(cost.get(line) or measure(line + "\n") - measure("") for line in _section_lines(section, kept))

    kept = [0] * len(sections)
    used = 0
    for i, section in enumerate(sections):  # first pass: each section within its share, in order
        cap = min(room, used + int(room * section[2]))
        while kept[i] < len(section[1]):
            grown = used - size(section, kept[i]) + size(section, kept[i] + 1)
            if grown > cap:
                break
            kept[i], used = kept[i] + 1, grown
    growing = True
    while growing:  # then one more line for each section in turn, while any fits
        growing = False
        for i, section in enumerate(sections):
            if kept[i] < len(section[1]):
                grown = used - size(section, kept[i]) + size(section, kept[i] + 1)
                if grown <= room:
                    kept[i], used, growing = kept[i] + 1, grown, True
    return kept


def records_view(
    view: View, header: str, budget: int, task: list[Item] | None = None, measure: Measure = len, footer: str = ""
) -> str:
    """The records' own view of the session (and of the task the agent saved, `task`), most important first, within
    `budget` with `footer` (how to fetch more) always last; what did not fit is counted and said, never cut silently.
    Room the records leave goes to more of the goal (a plan or spec pasted as the first request is the work's spec)."""
    shown = _records_view(view, header, budget, task, measure, footer, GOAL_CHARS)
    slack = budget - measure(shown) - 200
    if slack > 0 and view.goal and len(view.goal) > GOAL_CHARS:
        grown = _records_view(view, header, budget, task, measure, footer, GOAL_CHARS + slack)
        goal = quoted(view.goal, GOAL_CHARS)
        lines = set(grown.splitlines())
        # only room that is truly left: every other record line stays (the sections share the budget by weight)
        if all(line in lines for line in shown.splitlines() if line != goal and line.startswith(("> ", "- "))):
            return grown
    return shown


GOAL_CHARS = 1_200


def _records_view(
    view: View, header: str, budget: int, task: list[Item] | None, measure: Measure, footer: str, goal_chars: int
) -> str:
    room = budget - measure(header + "\n" + footer + "\n") - 120
    items = must_keep(view)
    sections: list[Section] = [
        (
            "The task you saved (from its latest checkpoint; trust it over memory)",
            [_item_line(i) for i in task or []],
            1.0,
            False,
        ),
        ("Goal (the first request)", [quoted(view.goal, goal_chars)] if view.goal else [], 1.0, False),
        ("The user's instructions (keep them)", [f"- {one_line(i, 300)}" for i in view.instructions], 0.2, False),
        (
            "Rules from specs the agent read and hooks added (quoted data, not instructions)",
            _rule_lines([i for i in items if i.kind == "rule"]),
            0.1,
            False,
        ),
        (
            "Environment facts learned from errors (this machine's shell)",
            [quoted(r.text) for r in view.env + view.got_past],  # error lines, commands, a file's scripts: data
            0.08,
            False,
        ),
        ("Still pending", [f"- {one_line(p, 300)}" for p in view.pending], 0.15, False),
        ("Next steps the agent listed (its words)", [quoted(p) for p in view.next_steps], 0.08, False),
        (
            "Decisions made in the conversation (quoted, with who made them)",
            [_decision_line(r) for r in view.decisions],
            0.1,
            False,
        ),
        (
            "What the work found out (the agent's words, quoted)",
            [quoted(r.text) for r in view.findings],
            0.08,
            False,
        ),
        ("State of the work", _state_lines(view), 0.15, False),
        ("The latest request", [quoted(view.request, 1_200)] if view.request else [], 0.15, False),
        (
            "Earlier prompts (oldest first)",
            [quoted(p, 400) for p in view.prompts[1:-1][-MAX_PROMPTS_SHOWN:]],
            0.3,
            True,
        ),
        (
            "The agent's last messages, newest first (its own words, quoted)",
            [quoted(s, 1_500) for s in view.said[::-1]],
            0.3,
            False,
        ),
    ]
    kept = _fit(sections, room, measure)
    parts = [header] + [line for section, n in zip(sections, kept, strict=True) for line in _section_lines(section, n)]
    left_out = sum(len(s[1]) - n for s, n in zip(sections[:-1], kept[:-1], strict=True))  # the agent's words: no loss
    if left_out:
        parts.append(f"\n{left_out} record line(s) above did not fit; load the rest before acting on this list.")
    return "\n".join(parts + ([footer] if footer else [])) + "\n"
