"""`ctxkeep hook pre-compact-worker`: the heavy half of PreCompact, run detached so Claude Code never waits for it.

The steps are every client's (`clients.core.ingest`: records, binding, offloads, a strict `pre_compact` checkpoint,
compress_history), each logged as it really went. Claude Code's part: its transcript is read only under this
project's allowed roots, plan mode's plan files only under its plans folder, and compress_history reads the
transcript file itself; the session's own task is `cc-<session_id>`. session-start (compact) waits for the worker,
within a bound, through the session's hook state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import closing
from pathlib import Path
from typing import Any

from ctxkeep.clients.claude_code.transcript import read_transcript
from ctxkeep.clients.core import ingest
from ctxkeep.clients.core.hook_io import Where
from ctxkeep.clients.core.hook_runner import HookInput
from ctxkeep.clients.core.transcripts import Reading
from ctxkeep.models.compress import CompressRequest
from ctxkeep.settings import Settings
from ctxkeep.storage.hot import open_hot_session
from ctxkeep.tools.compression import allowed_roots, resolve_transcript
from ctxkeep.tools.scope import open_scope

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


def _transcript(hook: HookInput, env: Mapping[str, str], project: str) -> Path:
    """The session's transcript, refused unless it is under this project's allowed roots."""
    if not hook.transcript_path:
        raise ValueError("the hook input has no transcript_path")
    return resolve_transcript(hook.transcript_path, allowed_roots(env, project, hook.cwd), hook.cwd or project)


def _claude_code(hook: HookInput, env: Mapping[str, str]) -> ingest.Client:
    def locate(w: Where, data: dict[str, Any]) -> Path:
        return _transcript(hook, env, w.project)

    def read(lines: list[str], data: dict[str, Any]) -> Reading:
        return read_transcript(lines, _plan_reader(env))

    def compress(path: Path, reading: Reading, task_id: str) -> CompressRequest:
        return CompressRequest(transcript_path=str(path), task_id=task_id)

    return ingest.Client("Claude Code", TASK_PREFIX, locate, read, compress)


async def pre_compact_worker(hook: HookInput, settings: Settings, env: Mapping[str, str]) -> tuple[str, str]:
    """The worker's whole run: ingest, then mark it done in the session's hook state (also when it failed)."""
    import time

    w = Where(settings.hook_db, settings.project, hook.session_id, env, time.perf_counter())
    note = "failed"
    try:
        async with open_scope(settings) as scope:
            note = await ingest.ingest(scope, w, _transcript(hook, env, w.project), _claude_code(hook, env), {}, env)
    finally:
        with closing(open_hot_session(w.db, w.project, w.session_id)) as conn:
            conn.set_hook_state(worker_done_at=w.now(), worker_note=note[:1000])
    return "", note
