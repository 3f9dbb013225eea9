"""Run a hook: parse Claude Code's JSON input, do the work on the project's database, log, never fail."""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path

import anyio
from pydantic import ConfigDict, Field, ValidationError

from ctxkeep.models.common import Model
from ctxkeep.project import hook_db_path
from ctxkeep.settings import Settings
from ctxkeep.text import without_bad_characters
from ctxkeep.tokens import use_estimate

LOG_NAME = "ctxkeep-hooks.log"


class HookInput(Model):
    """The fields of Claude Code's hook input that the hooks use (it sends more; they are ignored)."""

    model_config = ConfigDict(extra="ignore")

    session_id: str = Field(min_length=1, max_length=150, pattern=r"^[A-Za-z0-9._-]+$")
    transcript_path: str | None = Field(default=None, max_length=4096)
    cwd: str | None = Field(default=None, max_length=4096)
    hook_event_name: str | None = None
    trigger: str | None = None  # PreCompact: manual | auto
    source: str | None = None  # SessionStart: startup | resume | clear | compact


def log_path(env: Mapping[str, str]) -> Path:
    """CTXKEEP_HOOK_LOG, else `ctxkeep-hooks.log` beside the database."""
    if env.get("CTXKEEP_HOOK_LOG"):
        return Path(env["CTXKEEP_HOOK_LOG"]).expanduser()
    return hook_db_path(env).parent / LOG_NAME


def write_log(env: Mapping[str, str], line: str) -> None:
    """Append one line (created 0600); a log that cannot be written is given up on silently: hooks never fail."""
    try:
        path = log_path(env)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as log:
            stamp = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
            log.write(f"{stamp} {' '.join(without_bad_characters(line[:2000]).split())}\n")
    except (OSError, ValueError):
        pass


Work = Callable[[HookInput, Settings, Mapping[str, str]], Awaitable[tuple[str, str]]]  # (stdout, a note for the log)


def run_hook(name: str, work: Work, stdin_text: str, env: Mapping[str, str]) -> str:
    """What the hook prints (often nothing). Never raises: every failure becomes a log line."""
    started = time.perf_counter()
    try:
        hook = HookInput.model_validate_json(stdin_text)
        settings = Settings.from_env(env, hook_cwd=hook.cwd)
        use_estimate()
        output, note = anyio.run(work, hook, settings, env)
        write_log(env, f"{name} ok in {(time.perf_counter() - started) * 1000:.0f} ms, session {hook.session_id}: {note}")
        return output
    except Exception as exc:  # a hook must never block the user: log, print nothing, exit 0
        write_log(env, f"{name} failed: {type(exc).__name__}: {_describe(exc)}")
        return ""


def _describe(exc: Exception) -> str:
    """What failed, without echoing the input (a hook's stdin can hold anything)."""
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'input'}: {e['msg']}" for e in exc.errors(include_input=False))
    return str(exc)
