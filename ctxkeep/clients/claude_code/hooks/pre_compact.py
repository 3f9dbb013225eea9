"""`ctxkeep hook pre-compact`: before Claude Code compacts, keep the session's task and history in the store.

The transcript is read from under the allowed roots. The session task `cc-<session_id>` is rebuilt
from the transcript, or, when the agent saved a task itself, the session is bound to that task and
the transcript's todo list is carried into it; either is saved as a `pre_compact` checkpoint when
it changed. The transcript then goes through
compress_history for that task (tool outputs offloaded as evidence, the digest updated;
incremental). A transcript identical to the one ingested last time is skipped outright.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from pathlib import Path

import anyio

from ctxkeep.clients.claude_code.session_task import SessionView, merge_todos, read_session, session_state
from ctxkeep.clients.core.hook_runner import HookInput
from ctxkeep.errors import CheckpointRefused, InvalidInput, VersionConflict
from ctxkeep.models import CheckpointSaveRequest
from ctxkeep.models.compress import CompressRequest
from ctxkeep.settings import Settings
from ctxkeep.storage import SessionRow
from ctxkeep.text import utc_text
from ctxkeep.tools.checkpoint import checkpoint_save, latest_state
from ctxkeep.tools.compression import allowed_roots, compress_history, resolve_transcript
from ctxkeep.tools.scope import Scope, open_scope

MAX_PLAN_BYTES = 200_000


def session_task_id(session_id: str) -> str:
    return f"cc-{session_id}"


def _plan_reader(env: Mapping[str, str]) -> Callable[[str], str | None]:
    """Reads a plan file under ~/.claude/plans (where plan mode keeps plans), nothing elsewhere."""
    home = Path(env.get("HOME") or Path.home())
    plans = (home / ".claude" / "plans").resolve()

    def read(path: str) -> str | None:
        try:
            file = Path(path).resolve()
            if plans not in file.parents or not file.is_file() or file.stat().st_size > MAX_PLAN_BYTES:
                return None
            return file.read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError, RuntimeError):  # a NUL in the name, a symlink loop: no plan
            return None

    return read


async def _save(scope: Scope, task_id: str, view: SessionView, bound: bool) -> str:
    """Save the task as a `pre_compact` checkpoint when the transcript changed it: the session task rebuilt, or the
    agent's own task with the todo list carried in; a note on what happened."""
    async with scope.store.snapshot() as tx:
        current = await tx.checkpoints.latest_version(scope.project, task_id)
    previous = await latest_state(scope, task_id) if current else None
    state = merge_todos(previous, view) if bound and previous is not None else session_state(view, previous)
    if previous is not None and previous.canonical() == state.canonical():
        return f"{task_id} unchanged"
    # expected_version: an agent saving its task at the same moment wins; this save is then skipped, not merged over it
    request = CheckpointSaveRequest(task_id=task_id, state=state, trigger="pre_compact", expected_version=current)
    try:
        saved = await checkpoint_save(scope, request)
    except VersionConflict:
        return f"{task_id} was saved meanwhile; the transcript's view was not written over it"
    except CheckpointRefused as refused:  # the reading missed something; keep the record anyway, flagged
        saved = await checkpoint_save(scope, request.model_copy(update={"strict": False}))
        return f"saved {task_id} v{saved.version} with {len(refused.violations)} violation(s)"
    return f"saved {task_id} v{saved.version}"


async def ingest(scope: Scope, hook: HookInput, env: Mapping[str, str]) -> str:
    """Ingest the hook's transcript for its session; a note on what was done."""
    if not hook.transcript_path:
        raise InvalidInput("the hook input has no transcript_path")
    path = resolve_transcript(hook.transcript_path, allowed_roots(env, scope.project), hook.cwd or scope.project)
    data = await anyio.to_thread.run_sync(path.read_bytes)
    fingerprint = hashlib.sha256(data).hexdigest()
    async with scope.store.snapshot() as tx:
        known = await tx.sessions.get(scope.project, hook.session_id)
    if known is not None and known.transcript_sha256 == fingerprint:
        return f"nothing new in {path.name} (task {known.task_id})"
    view = await anyio.to_thread.run_sync(lambda: read_session(data.decode("utf-8", "replace").splitlines(), _plan_reader(env)))
    bound = view.bound_task is not None and await latest_state(scope, view.bound_task) is not None
    task_id = view.bound_task if bound and view.bound_task else session_task_id(hook.session_id)
    note = ("bound: " if bound else "") + await _save(scope, task_id, view, bound)
    compressed = await compress_history(scope, CompressRequest(transcript_path=str(path), task_id=task_id), env)
    async with scope.store.transaction() as tx:
        await tx.sessions.put(scope.project, SessionRow(hook.session_id, task_id, bound, str(path), fingerprint, utc_text(scope.clock()) or ""))
    return f"{note}; {len(compressed.evidence_refs)} tool output(s) offloaded, digest of {len(compressed.digest)} characters"


async def pre_compact(hook: HookInput, settings: Settings, env: Mapping[str, str]) -> tuple[str, str]:
    async with open_scope(settings) as scope:
        return "", await ingest(scope, hook, env)
