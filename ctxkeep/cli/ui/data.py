"""What each page of the viewer reads, through the tools and the Store interface (never SQL): plain records the pages
render. Nothing here writes, except that evidence reads file the outputs the hooks offloaded, as every evidence read
does (`take_offloads`: they already are evidence under the refs the model was shown)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ctxkeep.models import TaskState
from ctxkeep.models.checkpoint import Approval, CheckpointLoadResult, TaskSummary, Violation
from ctxkeep.models.delivered import DeliveredWorkingSet
from ctxkeep.models.journal import Action
from ctxkeep.storage import InjectionRow
from ctxkeep.tokens import count_tokens
from ctxkeep.tools.checkpoint import checkpoint_list, checkpoint_load, latest_state, verify_chain
from ctxkeep.tools.journal import journal_entries
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.working_set import delivered

MAX_TASKS = 200  # tasks on the overview (most recently saved first)
MAX_VERSIONS = 100  # versions on a task's timeline (the newest)
MAX_SESSIONS = 20  # sessions whose last injection is shown


@dataclass(frozen=True)
class Waiting:
    """An approval a task waits for."""

    task_id: str
    approval: Approval


@dataclass(frozen=True)
class Overview:
    tasks: list[TaskSummary]
    more_tasks: bool
    approvals: list[Waiting]
    open_intents: list[Action]
    working_sets: list[DeliveredWorkingSet]
    injections: list[InjectionRow]


@dataclass(frozen=True)
class Version:
    """One stored version on a task's timeline, with what verification said when it was saved."""

    version: int
    created_at: str
    trigger: str
    hash: str
    violations: list[Violation]
    goal_change_reason: str | None
    author: str | None
    owner: str | None
    took_over: str | None


@dataclass(frozen=True)
class TaskView:
    loaded: CheckpointLoadResult
    versions: list[Version]
    first_shown: int
    chain_problems: list[str]
    journal: list[Action]
    working_set: DeliveredWorkingSet | None


@dataclass(frozen=True)
class Section:
    """A part of an injection (the text under one heading) and its tokens."""

    title: str
    tokens: int


@dataclass(frozen=True)
class Injection:
    row: InjectionRow
    tokens: int
    sections: list[Section] = field(default_factory=list)


async def overview(scope: Scope, hooks: Scope) -> Overview:
    """The tasks, what waits for a person (approvals, open intents), the latest working sets and injections."""
    listed = await checkpoint_list(scope, MAX_TASKS)
    approvals: list[Waiting] = []
    for task in listed.tasks:
        if task.pending_approvals:
            state = await latest_state(scope, task.task_id)
            approvals += [Waiting(task.task_id, a) for a in (state.approvals if state else []) if a.status == "pending"]
    async with scope.store.snapshot() as tx:
        rows = await tx.working_sets.recent(scope.project, MAX_TASKS)
    async with hooks.store.snapshot() as tx:
        injections = await tx.sessions.injections(hooks.project, MAX_SESSIONS)
    return Overview(
        tasks=listed.tasks,
        more_tasks=listed.next_cursor is not None,
        approvals=approvals,
        open_intents=await journal_entries(scope, open_only=True, limit=200),
        working_sets=[shown for shown in map(delivered, rows) if shown is not None],
        injections=injections,
    )


def _version(
    row_version: int,
    created_at: str,
    trigger: str,
    hash_: str,
    violations_json: str,
    reason: str | None,
    author: str | None,
    owner: str | None,
    took_over: str | None,
) -> Version:
    try:
        violations = [Violation.model_validate(v) for v in json.loads(violations_json or "[]")]
    except ValueError:
        violations = [Violation(rule="unreadable", item="", detail="the stored violations are not valid JSON")]
    return Version(row_version, created_at, trigger, hash_, violations, reason, author, owner, took_over)


async def task_view(scope: Scope, task_id: str) -> TaskView:
    """A task: its latest version loaded (brief, resume checks), the timeline of its newest versions, whether its hash
    chain verifies, its journal and the working set it was last given. Raises NotFound for an unknown task."""
    loaded = await checkpoint_load(scope, task_id)
    first = max(1, loaded.version - MAX_VERSIONS + 1)
    async with scope.store.snapshot() as tx:
        chain = await tx.checkpoints.chain(scope.project, task_id, first, loaded.version)
        stored = await tx.working_sets.get(scope.project, task_id)
    versions = [
        _version(
            r.version,
            r.created_at,
            r.trigger,
            r.hash,
            r.violations_json,
            r.goal_change_reason,
            r.author,
            r.owner,
            r.took_over,
        )
        for r in chain
    ]
    return TaskView(
        loaded=loaded,
        versions=list(reversed(versions)),
        first_shown=first,
        chain_problems=await verify_chain(scope, task_id),
        journal=await journal_entries(scope, limit=500, task_id=task_id),
        working_set=delivered(stored) if stored else None,
    )


async def state_of(scope: Scope, task_id: str) -> TaskState | None:
    return await latest_state(scope, task_id)


def sections(text: str) -> list[Section]:
    """The injection cut at its markdown headings (`#`, `##`), each part with its tokens (a part before the first
    heading is "(opening)")."""
    parts: list[tuple[str, list[str]]] = [("(opening)", [])]
    for line in text.splitlines():
        if line.startswith("#"):
            parts.append((line.lstrip("#").strip() or "(untitled)", [line]))
        else:
            parts[-1][1].append(line)
    return [Section(title, count_tokens("\n".join(lines))) for title, lines in parts if "\n".join(lines).strip()]


async def injections(hooks: Scope) -> list[Injection]:
    """Each session's last injection, the most recently seen first, with its tokens and its sections'."""
    async with hooks.store.snapshot() as tx:
        rows = await tx.sessions.injections(hooks.project, MAX_SESSIONS)
    return [Injection(row, count_tokens(row.text), sections(row.text)) for row in rows]
