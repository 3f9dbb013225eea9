"""`ctxkeep hook pre-compact-worker`: the heavy half of PreCompact, run detached so Claude Code never waits for it.

In order, each step logged as it really went:
1. the transcript (read only under this project's allowed roots) becomes session records, beside the ones the live
   hooks captured (same keys: nothing counted twice);
2. the session is bound to its task first: the agent's own task when the transcript shows it calling this server's
   `checkpoint_save`, else `cc-<session_id>`;
3. tool outputs the live hooks offloaded are taken into the evidence store under the refs the model was shown;
4. the task is saved as a strict `pre_compact` checkpoint when the records changed it (lists too long for a
   checkpoint overflow to evidence, never cut silently; the agent's own task is never saved non-strict);
5. the transcript goes through compress_history for that task (outputs offloaded, the digest updated).
session-start (compact) waits for it, within a bound, through the session's hook state.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from contextlib import closing
from pathlib import Path

import anyio

from ctxkeep.clients.claude_code.session_task import merge_todos, session_state
from ctxkeep.clients.claude_code.transcript import latest, read_transcript
from ctxkeep.clients.core import live
from ctxkeep.clients.core.hook_io import Where
from ctxkeep.clients.core.hook_runner import HookInput
from ctxkeep.clients.core.session_view import View
from ctxkeep.clients.core.spool import spool_notes
from ctxkeep.errors import CheckpointRefused, VersionConflict
from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.compress import CompressRequest
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.settings import Settings
from ctxkeep.storage import SessionRow
from ctxkeep.storage.hot import open_hot_session
from ctxkeep.text import utc_text
from ctxkeep.tools.checkpoint import checkpoint_save, latest_state
from ctxkeep.tools.compression import allowed_roots, compress_history, resolve_transcript
from ctxkeep.tools.evidence import evidence_put, take_offloads
from ctxkeep.tools.scope import Scope, open_scope

MAX_PLAN_BYTES = 200_000
TASK_PREFIX = "cc-"


def _plan_reader(env: Mapping[str, str]) -> Callable[[str], str | None]:
    """Reads a plan file under the Claude Code config folder's plans/ (where plan mode keeps plans), nothing elsewhere."""
    from ctxkeep.project import claude_config_dir

    plans = (claude_config_dir(env) / "plans").resolve()

    def read(path: str) -> str | None:
        try:
            file = Path(path).resolve()
            if plans not in file.parents or not file.is_file() or file.stat().st_size > MAX_PLAN_BYTES:
                return None
            return file.read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError, RuntimeError):  # a NUL in the name, a symlink loop: no plan
            return None

    return read


def _overflow(scope: Scope, task_id: str, stored: list[EvidenceItem]) -> Callable[[str, list[str]], str]:
    """Items a checkpoint list cannot hold, kept as one evidence record each list (its ref goes on the list)."""
    from ctxkeep.tools.refs import evidence_ref

    def keep(what: str, rest: list[str]) -> str:
        item = EvidenceItem(content="\n".join(rest), kind="note", source="pre-compact", title=f"{task_id}: more {what}",
                            task_id=task_id)
        stored.append(item)
        return evidence_ref(scope.project, hashlib.sha256(item.content.encode("utf-8")).hexdigest(), item.kind,
                            item.source, item.title, item.task_id)

    return keep


async def _save(scope: Scope, task_id: str, view: View, bound: bool) -> str:
    """Save the task as a strict `pre_compact` checkpoint when the records changed it; a note on what happened."""
    async with scope.store.snapshot() as tx:
        current = await tx.checkpoints.latest_version(scope.project, task_id)
    previous = await latest_state(scope, task_id) if current else None
    overflow: list[EvidenceItem] = []
    keep = _overflow(scope, task_id, overflow)
    state: TaskState = merge_todos(previous, view, keep) if bound and previous is not None else session_state(view, previous, keep)
    if previous is not None and previous.canonical() == state.canonical():
        return f"{task_id} unchanged"
    if overflow:
        await evidence_put(scope, overflow)  # before the state that names them
    request = CheckpointSaveRequest(task_id=task_id, state=state, trigger="pre_compact", expected_version=current)
    try:
        saved = await checkpoint_save(scope, request)
    except VersionConflict:
        return f"{task_id} was saved meanwhile; the records' view was not written over it"
    except CheckpointRefused as refused:
        if bound:  # the agent's own task is never saved non-strict: its versions stay verified
            return f"{task_id} not saved: {len(refused.violations)} violation(s): {refused.violations[0].rule}"
        saved = await checkpoint_save(scope, request.model_copy(update={"strict": False}))
        return f"saved {task_id} v{saved.version} with {len(refused.violations)} violation(s) (the session's own task)"
    return f"saved {task_id} v{saved.version}" + (f", {len(overflow)} overflow list(s) in evidence" if overflow else "")


async def _bind(scope: Scope, w: Where, transcript_path: Path, fingerprint: str, bound_task: str | None) -> tuple[str, bool]:
    bound = bound_task is not None and await latest_state(scope, bound_task) is not None
    task_id = bound_task if bound and bound_task else f"{TASK_PREFIX}{w.session_id}"
    async with scope.store.transaction() as tx:
        await tx.sessions.put(scope.project, SessionRow(w.session_id, task_id, bound, str(transcript_path), fingerprint,
                                                        utc_text(scope.clock()) or ""))
    return task_id, bound


async def _steps(scope: Scope, w: Where, task_id: str, view: View, bound: bool, path: Path, env: Mapping[str, str]) -> list[str]:
    """Steps 3–5; each failure is noted and the later steps still run (what was done stands)."""
    notes = []
    try:
        notes.append(f"{await take_offloads(scope)} offloaded output(s) taken in")
    except Exception as exc:
        notes.append(f"taking in the offloaded outputs failed: {type(exc).__name__}: {str(exc)[:200]}")
    try:
        notes.append(await _save(scope, task_id, view, bound))
    except Exception as exc:
        notes.append(f"saving {task_id} failed: {type(exc).__name__}: {str(exc)[:200]}")
    try:
        compressed = await compress_history(scope, CompressRequest(transcript_path=str(path), task_id=task_id), env)
        notes.append(f"{len(compressed.evidence_refs)} tool output(s) offloaded, digest of {len(compressed.digest)} characters")
    except Exception as exc:
        notes.append(f"compressing the history failed: {type(exc).__name__}: {str(exc)[:200]}")
    return notes


async def ingest(scope: Scope, w: Where, hook: HookInput, env: Mapping[str, str]) -> str:
    """Steps 1–5 above; a note saying how each went."""
    if not hook.transcript_path:
        raise ValueError("the hook input has no transcript_path")
    path = resolve_transcript(hook.transcript_path, allowed_roots(env, scope.project, hook.cwd), hook.cwd or scope.project)
    data = await anyio.to_thread.run_sync(path.read_bytes)
    transcript = read_transcript(data.decode("utf-8", "replace").splitlines(), _plan_reader(env))
    with closing(open_hot_session(w.db, w.project, w.session_id)) as conn:
        conn.put_records([(r.kind, r.key, r.text, r.at, r.status, r.source, r.ref)
                                                        for r in latest(transcript.records)])
        view = live.view_of(conn, w)
    task_id, bound = await _bind(scope, w, path, hashlib.sha256(data).hexdigest(), transcript.bound_task)
    notes = [("bound to the agent's task " if bound else "bound to ") + task_id]
    notes += await spool_notes(scope)  # with PostgreSQL: the summaries the hooks kept, first
    notes += await _steps(scope, w, task_id, view, bound, path, env)
    notes += await spool_notes(scope, w.session_id)  # with PostgreSQL: what the hooks read, back into their spool
    stat = path.stat()
    with closing(open_hot_session(w.db, w.project, w.session_id)) as conn:
        conn.set_hook_state(transcript_size=stat.st_size, transcript_mtime_ns=stat.st_mtime_ns)
    return "; ".join(notes)


async def pre_compact_worker(hook: HookInput, settings: Settings, env: Mapping[str, str]) -> tuple[str, str]:
    """The worker's whole run: ingest, then mark it done in the session's hook state (also when it failed)."""
    import time

    w = Where(settings.hook_db, settings.project, hook.session_id, env, time.perf_counter())
    note = "failed"
    try:
        async with open_scope(settings) as scope:
            note = await ingest(scope, w, hook, env)
    finally:
        with closing(open_hot_session(w.db, w.project, w.session_id)) as conn:
            conn.set_hook_state(worker_done_at=w.now(), worker_note=note[:1000])
    return "", note
