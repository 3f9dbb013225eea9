"""What each page of the viewer reads, through the tools and the Store interface (never SQL): plain records the pages
render. Nothing here writes, except that evidence reads file the outputs the hooks offloaded, as every evidence read
does (`take_offloads`: they already are evidence under the refs the model was shown)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ctxkeep.models.checkpoint import Approval, CheckpointLoadResult, TaskSummary, Violation
from ctxkeep.models.delivered import DeliveredWorkingSet
from ctxkeep.models.journal import Action
from ctxkeep.storage import InjectionRow, SeenSessionRow, ShownRow
from ctxkeep.tokens import count_tokens
from ctxkeep.tools.checkpoint import checkpoint_list, checkpoint_load, latest_state, verify_chain
from ctxkeep.tools.journal import journal_entries
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.working_set import delivered

MAX_TASKS = 200  # tasks on the overview (most recently saved first)
MAX_VERSIONS = 100  # versions on a task's timeline (the newest)
MAX_SESSIONS = 50  # sessions on the overview and the injections page (the most recently seen)
MAX_SHOWN = 150  # entries of one session's log (the hooks keep 50 of each kind)


@dataclass(frozen=True)
class Waiting:
    """An approval a task waits for."""

    task_id: str
    approval: Approval


@dataclass(frozen=True)
class SeenSession:
    """A session the hooks saw, and the task with a checkpoint its records belong to (None: it has none yet)."""

    row: SeenSessionRow
    task_id: str | None


@dataclass(frozen=True)
class Overview:
    tasks: list[TaskSummary]
    more_tasks: bool
    approvals: list[Waiting]
    open_intents: list[Action]
    working_sets: list[DeliveredWorkingSet]
    sessions: list[SeenSession]


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


@dataclass(frozen=True)
class Shown:
    """One entry of a session's log of what the model was shown, with its tokens and (injections) its sections."""

    row: ShownRow
    tokens: int
    sections: list[Section] = field(default_factory=list)


@dataclass(frozen=True)
class SessionView:
    """A session: what the hooks saw of it, everything they showed the model (oldest first) and, for a session from
    before that log, the last injection the hooks kept."""

    seen: SeenSession
    shown: list[Shown]
    last_injection: Injection | None


def _client_prefixes() -> tuple[str, ...]:
    """Each client's prefix of its sessions' own task ids (`cc-<session>`, `codex-<session>`, …)."""
    from importlib import import_module

    from ctxkeep.clients.table import CLIENTS

    return tuple(str(import_module(client.module("hooks")).TASK_PREFIX) for client in CLIENTS)


def _session_task(row: SeenSessionRow, task_ids: set[str]) -> str | None:
    """The task with a checkpoint the session's records belong to: the one it is bound to, else its own."""
    candidates = ([row.task_id] if row.task_id else []) + [p + row.session_id for p in _client_prefixes()]
    return next((task for task in candidates if task in task_ids), None)


async def _task_ids(scope: Scope, wanted: set[str]) -> set[str]:
    """Those of `wanted` that are tasks with a checkpoint."""
    async with scope.store.snapshot() as tx:
        return {task for task in sorted(wanted) if await tx.checkpoints.latest_version(scope.project, task) > 0}


async def seen_sessions(scope: Scope, hooks: Scope, limit: int = MAX_SESSIONS) -> list[SeenSession]:
    """The sessions the hooks saw, the most recently seen first, each with its task when that has a checkpoint."""
    async with hooks.store.snapshot() as tx:
        rows = await tx.sessions.seen(hooks.project, limit)
    wanted = {
        t for r in rows for t in ([r.task_id] if r.task_id else []) + [p + r.session_id for p in _client_prefixes()]
    }
    known = await _task_ids(scope, wanted)
    return [SeenSession(row, _session_task(row, known)) for row in rows]


def _shown(row: ShownRow) -> Shown:
    return Shown(row, count_tokens(row.text), sections(row.text) if row.kind == "injected" else [])


async def session_view(scope: Scope, hooks: Scope, session_id: str) -> SessionView:
    """One session with its whole log; NotFound when the hooks never saw it."""
    from ctxkeep.errors import NotFound

    seen = next((s for s in await seen_sessions(scope, hooks, 10_000) if s.row.session_id == session_id), None)
    if seen is None:
        raise NotFound(f"no session {session_id!r} in this project (the overview lists the sessions the hooks saw)")
    async with hooks.store.snapshot() as tx:
        rows = await tx.sessions.shown(hooks.project, session_id, MAX_SHOWN)
        last = [r for r in await tx.sessions.injections(hooks.project, 10_000) if r.session_id == session_id]
    injected = any(r.kind == "injected" for r in rows)
    kept = Injection(last[0], count_tokens(last[0].text), sections(last[0].text)) if last and not injected else None
    return SessionView(seen, [_shown(r) for r in rows], kept)


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
    return Overview(
        tasks=listed.tasks,
        more_tasks=listed.next_cursor is not None,
        approvals=approvals,
        open_intents=await journal_entries(scope, open_only=True, limit=200),
        working_sets=[shown for shown in map(delivered, rows) if shown is not None],
        sessions=await seen_sessions(scope, hooks),
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


@dataclass(frozen=True)
class SessionInjections:
    """A session's injections, oldest first (from its log; or the one the hooks kept, before that log)."""

    seen: SeenSession
    injections: list[Shown]
    last_kept: Injection | None


async def injections(scope: Scope, hooks: Scope) -> list[SessionInjections]:
    """Every injection of each session that had one, the sessions seen most recently first."""
    sessions = await seen_sessions(scope, hooks)
    async with hooks.store.snapshot() as tx:
        kept = {row.session_id: row for row in await tx.sessions.injections(hooks.project, MAX_SESSIONS)}
        found = []
        for seen in sessions:
            if seen.row.injected:
                rows = await tx.sessions.shown(hooks.project, seen.row.session_id, MAX_SHOWN)
                found.append(SessionInjections(seen, [_shown(r) for r in rows if r.kind == "injected"], None))
            elif seen.row.session_id in kept:  # a session from before the log: only its last injection is known
                row = kept[seen.row.session_id]
                found.append(SessionInjections(seen, [], Injection(row, count_tokens(row.text), sections(row.text))))
    return found
