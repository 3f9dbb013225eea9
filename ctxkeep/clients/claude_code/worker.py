"""`ctxkeep hook claude-code worker`: the heavy half of PreCompact, run detached so Claude Code never waits for it.

The steps are every client's (`clients.core.ingest`: records, binding, offloads, a strict `pre_compact` checkpoint,
compress_history), each logged as it really went. Claude Code's part: its transcript is read only under this
project's allowed roots, plan mode's plan files only under its plans folder, and compress_history reads the
transcript file itself; the session's own task is `cc-<session_id>`. session-start (compact) waits for the worker,
within a bound, through the session's hook state.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import IO, Any

from ctxkeep.clients.claude_code.hooks import TASK_PREFIX
from ctxkeep.clients.claude_code.transcript import read_transcript
from ctxkeep.clients.core import ingest
from ctxkeep.clients.core.hook_io import Where
from ctxkeep.clients.core.transcripts import Reading
from ctxkeep.models.compress import CompressRequest
from ctxkeep.tools.compression import allowed_roots, resolve_transcript

MAX_PLAN_BYTES = 200_000


def _plan_reader(env: Mapping[str, str]) -> Callable[[str], str | None]:
    """Reads a plan file under the Claude Code config folder's plans/ (where plan mode keeps plans), nothing elsewhere."""
    from ctxkeep.project import claude_config_dir

    plans = (Path(claude_config_dir(env)) / "plans").resolve()

    def read(path: str) -> str | None:
        try:
            file = Path(path).resolve()
            if plans not in file.parents or not file.is_file() or file.stat().st_size > MAX_PLAN_BYTES:
                return None
            return file.read_text(encoding="utf-8", errors="replace")
        except (OSError, ValueError, RuntimeError):  # a NUL in the name, a symlink loop: no plan
            return None

    return read


def _claude_code(env: Mapping[str, str]) -> ingest.Client:
    def locate(w: Where, data: dict[str, Any]) -> Path:
        """The session's transcript, refused unless it is under this project's allowed roots."""
        path, cwd = data.get("transcript_path"), data.get("cwd") if isinstance(data.get("cwd"), str) else None
        if not isinstance(path, str) or not path:
            raise ValueError("the hook input has no transcript_path")
        return resolve_transcript(path, allowed_roots(env, w.project, cwd), cwd or w.project)

    def read(lines: list[str], data: dict[str, Any]) -> Reading:
        return read_transcript(lines, _plan_reader(env))

    def compress(path: Path, reading: Reading, task_id: str) -> CompressRequest:
        return CompressRequest(transcript_path=str(path), task_id=task_id)

    def resume(lines: list[str], data: dict[str, Any], state: dict[str, Any] | None) -> Reading:
        return read_transcript(lines, _plan_reader(env), state)

    return ingest.Client("Claude Code", TASK_PREFIX, locate, read, compress, resume)


def run_worker(stdin: IO[bytes], env: Mapping[str, str]) -> int:
    """The worker's whole run on the hook input PreCompact passed it; always 0, one log line either way."""
    return ingest.run_worker(_claude_code(env), stdin, env)
