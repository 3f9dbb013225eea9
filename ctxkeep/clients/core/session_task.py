"""A client session's task state, built from its records (the agent need not cooperate; any client).

goal: the first substantive prompt; constraints: the user's instructions (negated ones verbatim); plan: the latest
plan's steps; pending and completed: the latest todo list or tasks, plan steps not shown done, and the files edited;
open questions: errors still open (quoted, with their tool); decisions: none (the agent's own); `extra` keeps the
rules quoted from specs (data with their sources, never constraints), the latest requests, the branch and the state
of the work. A list longer than a checkpoint holds is never cut silently: the caller stores the rest as evidence and
the list ends with "… N more … (ev_…)"; a todo that leaves the list unfinished, and an overflow line that is
rewritten, leave through `dropped`, so every version verifies. `merge_todos` carries the todo list into a task the
agent saved itself, changing nothing else of it.
"""

from __future__ import annotations

from collections.abc import Callable

from ctxkeep.clients.core.session_view import View
from ctxkeep.models import Dropped, TaskState
from ctxkeep.models.common import MAX_ITEMS
from ctxkeep.text import inline_quote, match_key, one_line

MAX_GOAL_CHARS = 2_000
MAX_ITEM_CHARS = 500
OVERFLOW_MARK = "… "
Overflow = Callable[
    [str, list[str]], str
]  # (what the list holds, the items left over) -> the ref they are stored under


def _clean(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    return one_line(text, limit - 1)


def _is_overflow(item: str) -> bool:
    return item.startswith(OVERFLOW_MARK) and " more " in item and "(ev_" in item


def fit(
    items: list[str], what: str, overflow: Overflow | None, limit: int = MAX_ITEMS, keep: str = "first"
) -> list[str]:
    """`items` within `limit`: the first (or, `keep="last"`, the latest) kept, the rest stored through `overflow` and
    named on the last line ("… N more … (ref)")."""
    items = [i for i in dict.fromkeys(items) if not _is_overflow(i)]
    if len(items) <= limit or overflow is None:
        return items[:limit] if keep == "first" else items[-limit:]
    cut = len(items) - (limit - 1)
    kept, rest = (items[: limit - 1], items[limit - 1 :]) if keep == "first" else (items[cut:], items[:cut])
    return kept + [f"{OVERFLOW_MARK}{len(rest)} more {what} ({overflow(what, rest)})"]


def archived(before: list[str], after: list[str], kind: str) -> list[Dropped]:
    """Items of `before` that `fit` moved to evidence: they leave the state through `dropped`, naming the archive."""
    marker = next((i for i in after if _is_overflow(i)), None)
    if marker is None:
        return []
    now = {match_key(i) for i in after}
    ref = marker.rsplit("(", 1)[-1].rstrip(")")
    return [
        Dropped(kind=kind, item=item, reason=f"archived to evidence {ref} (the list is over {MAX_ITEMS} items)")  # type: ignore[arg-type]
        for item in before
        if not _is_overflow(item) and match_key(item) not in now
    ]


def _accumulated(previous: list[str], new: list[str]) -> list[str]:
    """Earlier items first (never lost), then the new ones, without repeats."""
    out, seen = list(previous), {match_key(item) for item in previous}
    for item in new:
        if match_key(item) not in seen:
            seen.add(match_key(item))
            out.append(item)
    return out


def _next_action(view: View) -> str | None:
    if view.pending:
        return f"Next: {view.pending[0]}"
    return f"Respond to the latest request: {_clean(view.request)}" if view.request else None


def _dropped(previous: TaskState | None, pending: list[str], completed: list[str]) -> list[Dropped]:
    if previous is None:
        return []
    now = {match_key(i) for i in pending + completed}
    out = []
    for item in previous.pending:
        if match_key(item) not in now:
            reason = (
                "the overflow list was rewritten (see the new last line)"
                if _is_overflow(item)
                else "no longer on the agent's todo list"
            )
            out.append(Dropped(kind="pending", item=item, reason=reason))
    out += [
        Dropped(kind="completed", item=item, reason="the overflow list was rewritten (see the new last line)")
        for item in previous.completed
        if _is_overflow(item) and match_key(item) not in now
    ]
    return out


def session_state(
    view: View, previous: TaskState | None, overflow: Overflow | None = None, client: str = "Claude Code"
) -> TaskState:
    """The session task's next state: the previous one carried forward with what the records say now (`client` names
    the goal of a session without a prompt)."""
    goal = previous.goal if previous else _clean(view.goal or "", MAX_GOAL_CHARS) or f"{client} session"
    constraints = fit(
        _accumulated(list(previous.constraints) if previous else [], [_clean(i) for i in view.instructions]),
        "constraints",
        overflow,
    )
    pending = fit([_clean(p) for p in view.pending], "pending items (each still pending)", overflow)
    done = [_clean(d) for d in view.done] + [_clean(f"Edited {path}") for path in view.edits]
    completed = fit(
        _accumulated([c for c in (previous.completed if previous else []) if not _is_overflow(c)], done),
        "completed items",
        overflow,
        keep="last",
    )
    completed = [c for c in completed if match_key(c) not in {match_key(p) for p in pending}]
    return TaskState(
        goal=goal,
        constraints=constraints,
        pending=pending,
        completed=completed,
        plan=fit([_clean(s) for s in view.plan], "plan steps", overflow) or (list(previous.plan) if previous else []),
        dropped=(
            _dropped(previous, pending, completed)
            + (
                archived(previous.completed, completed, "completed") + archived(previous.pending, pending, "pending")
                if previous
                else []
            )
        )[:MAX_ITEMS],
        next_action=_next_action(view),
        open_questions=[
            _clean(f"Error still open after {inline_quote(e.key, 80)}: {inline_quote(e.text, 300)}")
            for e in view.errors
        ],
        extra={
            "source": "session records",
            "spec_rules": [{"rule": _clean(r.text), "source": r.source, "ref": r.ref} for r in view.rules[:50]],
            "latest_requests": [_clean(p) for p in view.prompts[-5:]],
            "branch": view.branch,
            "uncommitted": view.uncommitted[:50],
            "unverified": view.unverified[:50],
        },
    )


def merge_todos(state: TaskState, view: View, overflow: Overflow | None = None) -> TaskState:
    """The agent's own task with the session's todo list carried in: finished todos move from pending to completed,
    new ones join pending (a list over the limit overflows to evidence). Nothing else of the agent's state changes."""
    done = {match_key(item) for item in view.done}
    known = {match_key(item) for item in [*state.pending, *state.completed]}
    pending = [item for item in state.pending if match_key(item) not in done]
    pending += [_clean(item) for item in view.pending if match_key(item) not in known]
    completed = state.completed + [item for item in state.pending if match_key(item) in done]
    pending = fit(pending, "pending items (each still pending)", overflow)
    completed = fit(completed, "completed items", overflow, keep="last")
    dropped = (
        _dropped(state, pending, completed)
        + archived(state.completed, completed, "completed")
        + archived(state.pending, pending, "pending")
    )
    return TaskState.model_validate(
        {**state.model_dump(), "pending": pending, "completed": completed, "dropped": dropped}
    )
