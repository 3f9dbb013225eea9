"""The heavy half of a client's compaction hooks, run detached (`ctxkeep hook <client> worker`) so the client never
waits for it: a transcript already read by the client's reader (`transcripts.Reading`) goes into the store.

In order, each step noted as it really went (a failed step does not stop the later ones):
1. the transcript's records join the ones the live hooks captured (same keys: nothing counted twice); a client whose
   reader can resume (Claude Code's) reads only the lines appended since the last ingest, from the reader state that
   ingest kept in the session's `transcript` hook record, and the whole file when it shrank or changed before there;
2. the session is bound to its task: the agent's own when the transcript shows it calling ctxkeep's
   `checkpoint_save`, else `<client prefix><session id>`;
3. with a shared PostgreSQL store, tool outputs the live hooks offloaded into this machine's spool are taken into
   it under the refs the model was shown (counted with the tokenizer); an SQLite store's inbox is left to the
   server, which counts them with the tokenizer as it takes them in;
4. the task is saved as a strict `pre_compact` checkpoint when the records changed it (lists too long for a
   checkpoint overflow to evidence; the agent's own task is never saved non-strict);
5. the conversation goes through compress_history for that task (outputs offloaded, the digest updated).
The session's hook state says when it started and finished; a session-start hook waits for it within a bound.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from contextlib import closing
from pathlib import Path
from typing import IO, Any

import anyio

from ctxkeep.clients.core import live
from ctxkeep.clients.core.hook_config import hook_config
from ctxkeep.clients.core.hook_io import Where, describe, log_for, read_input, where
from ctxkeep.clients.core.session_task import merge_todos, session_state
from ctxkeep.clients.core.session_view import View
from ctxkeep.clients.core.spool import spool_notes
from ctxkeep.clients.core.transcripts import Reading
from ctxkeep.errors import CheckpointRefused, VersionConflict
from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.compress import CompressRequest
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.settings import Settings
from ctxkeep.storage import SessionRow
from ctxkeep.storage.hook_store import HotSession, open_hot_session
from ctxkeep.text import utc_text
from ctxkeep.tools.checkpoint import checkpoint_save, latest_state
from ctxkeep.tools.compression import compress_history
from ctxkeep.tools.evidence import evidence_put, take_offloads
from ctxkeep.tools.scope import Scope, open_scope

Reader = Callable[[list[str], dict[str, Any]], Reading]  # (transcript lines, hook input) -> what they hold
Locate = Callable[[Where, dict[str, Any]], "Path | str | None"]
Compression = Callable[[Path, Reading, str], "CompressRequest | None"]  # (transcript, reading, task) -> the request
# (lines appended, hook input, the state the last read saved or None) -> what they add, its `state` the next one's
Resume = Callable[[list[str], dict[str, Any], "dict[str, Any] | None"], Reading]


def _messages(path: Path, reading: Reading, task_id: str) -> CompressRequest | None:
    return CompressRequest(messages=reading.messages, format="anthropic", task_id=task_id) if reading.messages else None


class Client:
    """What the worker needs of a client: its name (for the log and the goal of a prompt-less session), its task
    prefix, where its transcript of a session is (None: not one it may read), its reader, what compress_history is
    given (by default the reading's messages), and, for a reader that can go on from a saved state (`resume`: only
    when compress_history does not need the reading's messages), the worker then reads only what was appended."""

    def __init__(
        self,
        name: str,
        prefix: str,
        locate: Locate,
        read: Reader,
        compress: Compression = _messages,
        resume: Resume | None = None,
    ) -> None:
        self.name, self.prefix, self.locate, self.read, self.compress = name, prefix, locate, read, compress
        self.resume = resume


def _overflow(scope: Scope, task_id: str, stored: list[EvidenceItem]) -> Callable[[str, list[str]], str]:
    """Items a checkpoint list cannot hold, kept as one evidence record each list (its ref goes on the list)."""
    from ctxkeep.tools.shared.refs import evidence_ref

    def keep(what: str, rest: list[str]) -> str:
        item = EvidenceItem(
            content="\n".join(rest), kind="note", source="pre-compact", title=f"{task_id}: more {what}", task_id=task_id
        )
        stored.append(item)
        return evidence_ref(
            scope.project,
            hashlib.sha256(item.content.encode("utf-8")).hexdigest(),
            item.kind,
            item.source,
            item.title,
            item.task_id,
        )

    return keep


async def save_task(scope: Scope, task_id: str, view: View, bound: bool, client: str) -> str:
    """Save the task as a strict `pre_compact` checkpoint when the records changed it; a note on what happened."""
    async with scope.store.snapshot() as tx:
        current = await tx.checkpoints.latest_version(scope.project, task_id)
    previous = await latest_state(scope, task_id) if current else None
    overflow: list[EvidenceItem] = []
    keep = _overflow(scope, task_id, overflow)
    state: TaskState = (
        merge_todos(previous, view, keep)
        if bound and previous is not None
        else session_state(view, previous, keep, client)
    )
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


async def bind(
    scope: Scope, w: Where, path: Path, fingerprint: str, bound_task: str | None, prefix: str
) -> tuple[str, bool]:
    """Bind the session to the agent's own task when it has a checkpoint (the one the transcript shows it saving, else
    the one it was bound to before: a resumed transcript need not show the save again), else to `<prefix><session id>`."""
    if bound_task is None:
        async with scope.store.snapshot() as tx:
            row = await tx.sessions.get(scope.project, w.session_id)
        bound_task = row.task_id if row is not None and row.bound else None
    bound = bound_task is not None and await latest_state(scope, bound_task) is not None
    task_id = bound_task if bound and bound_task else f"{prefix}{w.session_id}"
    async with scope.store.transaction() as tx:
        await tx.sessions.put(
            scope.project,
            SessionRow(w.session_id, task_id, bound, str(path), fingerprint, utc_text(scope.clock()) or ""),
        )
    return task_id, bound


async def _take_offloads(scope: Scope) -> str:
    """Step 3. With an SQLite store the offloaded outputs wait in its inbox for the server (or any tool that reads
    evidence), which takes them in counting their tokens with the tokenizer: the worker counts with an estimate (it
    never loads tiktoken) and would store a count ~30% short. A shared PostgreSQL store cannot read this machine's
    spool, so the worker moves them there itself, counting with the tokenizer for them."""
    if scope.spool is None:
        return "offloaded outputs left in the inbox for the server (it counts their tokens)"
    from ctxkeep.tokens import use_estimate, use_tokenizer

    use_tokenizer()
    try:
        return f"{await take_offloads(scope)} offloaded output(s) taken in"
    finally:
        use_estimate()


async def _steps(
    scope: Scope,
    task_id: str,
    view: View,
    bound: bool,
    compress: CompressRequest | None,
    client: str,
    env: Mapping[str, str],
) -> list[str]:
    """Steps 3–5; each failure is noted and the later steps still run (what was done stands)."""
    notes = []
    try:
        notes.append(await _take_offloads(scope))
    except Exception as exc:
        notes.append(f"taking in the offloaded outputs failed: {type(exc).__name__}: {str(exc)[:200]}")
    try:
        notes.append(await save_task(scope, task_id, view, bound, client))
    except Exception as exc:
        notes.append(f"saving {task_id} failed: {type(exc).__name__}: {str(exc)[:200]}")
    try:
        if compress is not None:
            compressed = await compress_history(scope, compress, env)
            notes.append(
                f"{len(compressed.evidence_refs)} tool output(s) offloaded, digest of {len(compressed.digest)} characters"
            )
    except Exception as exc:
        notes.append(f"compressing the history failed: {type(exc).__name__}: {str(exc)[:200]}")
    return notes


CURSOR = "transcript"  # the hook record that keeps where the last ingest stopped reading (`_read_appended`)


def _read_appended(
    conn: HotSession, data: bytes, client: Client, hook: dict[str, Any]
) -> tuple[Reading, str, str, str]:
    """The transcript's lines appended since the last ingest, read from the state that ingest saved (the same records a
    read of the whole file gives); the whole file when there was none, or when the file shrank or changed before where
    it stopped. Only whole lines are read (the last one may be half written: it waits for the next ingest). Returns
    the reading, the file's sha256, the cursor to keep (JSON) and what was read (for the note)."""
    assert client.resume is not None
    saved = next((json.loads(r[2]) for r in conn.records(("hook",)) if r[1] == CURSOR), None)
    end = data.rfind(b"\n") + 1
    start, state, how = 0, None, "the whole transcript"
    if isinstance(saved, dict) and isinstance(saved.get("offset"), int) and 0 < saved["offset"] <= end:
        prefix = hashlib.sha256(data[: saved["offset"]])
        if prefix.hexdigest() == saved.get("sha256"):
            start, state = saved["offset"], saved.get("state")
            how = f"the {end - start:,} byte(s) appended since the last ingest"
        else:
            how = "the whole transcript (it changed before where the last ingest stopped)"
    elif isinstance(saved, dict):
        how = "the whole transcript (it is shorter than where the last ingest stopped)"
    reading = client.resume(data[start:end].decode("utf-8", "replace").splitlines(), hook, state)
    cursor = {"offset": end, "sha256": hashlib.sha256(data[:end]).hexdigest(), "state": reading.state}
    return reading, hashlib.sha256(data).hexdigest(), json.dumps(cursor, ensure_ascii=False), how


async def ingest(
    scope: Scope, w: Where, path: Path, client: Client, hook: dict[str, Any], env: Mapping[str, str]
) -> str:
    """Steps 1–5 above for the transcript at `path`; a note saying how each went."""
    stat = path.stat()  # before the read: a file that grows meanwhile differs from it, so the next pre-compact reads on
    data = await anyio.to_thread.run_sync(path.read_bytes)
    with closing(open_hot_session(w.db, w.project, w.session_id, w.config.busy_timeout_ms)) as conn:
        if client.resume is None:
            reading, fingerprint, cursor, how = (
                client.read(data.decode("utf-8", "replace").splitlines(), hook),
                hashlib.sha256(data).hexdigest(),
                None,
                "",
            )
        else:
            reading, fingerprint, cursor, how = _read_appended(conn, data, client, hook)
        conn.put_records([(r.kind, r.key, r.text, r.at, r.status, r.source, r.ref) for r in reading.latest_records()])
        if cursor is not None:
            conn.keep(CURSOR, cursor, w.now())
        view = live.view_of(conn, w)
    task_id, bound = await bind(scope, w, path, fingerprint, reading.bound_task, client.prefix)
    notes = [
        f"{len(reading.records)} record(s) from {reading.lines} line(s), {reading.skipped} skipped",
        *([f"read {how}"] if how else []),
        ("bound to the agent's task " if bound else "bound to ") + task_id,
    ]
    notes += await spool_notes(scope)  # with PostgreSQL: the summaries the hooks kept, first
    notes += await _steps(scope, task_id, view, bound, client.compress(path, reading, task_id), client.name, env)
    notes += await spool_notes(scope, w.session_id)  # with PostgreSQL: what the hooks read, back into their spool
    with closing(open_hot_session(w.db, w.project, w.session_id, w.config.busy_timeout_ms)) as conn:
        conn.set_hook_state(transcript_size=stat.st_size, transcript_mtime_ns=stat.st_mtime_ns)
    return "; ".join(notes)


async def _work(client: Client, data: dict[str, Any], env: Mapping[str, str]) -> str:
    from ctxkeep.tokens import use_estimate

    use_estimate()
    w = where(data, hook_config(env))
    note = "failed"
    try:
        settings = Settings.from_env(env, hook_cwd=data.get("cwd") if isinstance(data.get("cwd"), str) else None)
        found = client.locate(w, data)
        if found is None:
            raise ValueError(f"the hook input names no {client.name} transcript of this session ctxkeep may read")
        async with open_scope(settings) as scope:
            note = await ingest(scope, w, Path(found), client, data, env)
    finally:
        with closing(open_hot_session(w.db, w.project, w.session_id, w.config.busy_timeout_ms)) as conn:
            conn.set_hook_state(worker_done_at=w.now(), worker_note=note[:1000])
    return f"session {w.session_id}: {note}"


def run_worker(client: Client, stdin: IO[bytes], env: Mapping[str, str]) -> int:
    """The worker's whole run on the hook input it was given; always 0, one log line either way."""
    started = time.perf_counter()
    try:
        note = anyio.run(_work, client, read_input(stdin), env)
        log_for(env, f"{client.name} worker ok in {(time.perf_counter() - started) * 1000:.0f} ms, {note}")
    except Exception as exc:
        log_for(env, f"{client.name} worker failed: {type(exc).__name__}: {describe(exc)}")
    return 0


__all__ = ["Client", "bind", "ingest", "run_worker", "save_task"]
