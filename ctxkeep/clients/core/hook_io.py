"""What every hook process shares: its input read defensively, where it works, its log line, and never failing.

A hook's input is one JSON object on stdin (at most MAX_INPUT_BYTES; more is refused, never held). A hook never
blocks the user: any failure becomes one line in the hook log (`ctxkeep-hooks.log` beside the database,
`CTXKEEP_HOOK_LOG` moves it: `hook_config.log_path`), never the input itself, and the hook prints nothing or passes
the output through. Standard library only (per-event hooks).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping

from ctxkeep.clients.core.hook_config import HookConfig, log_path
from ctxkeep.project import resolve_project
from ctxkeep.text import without_bad_characters

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import IO, Any, NamedTuple
else:
    from ctxkeep.named_tuple import NamedTuple

MAX_INPUT_BYTES = 64 * 1024 * 1024
_SESSION_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


class HookInputError(ValueError):
    """The hook input is not what a client sends (not JSON, not an object, no usable session id, too large)."""


class Where(NamedTuple):
    """The settings, project and session a hook works on, and its clock."""

    config: HookConfig
    project: str
    session_id: str
    started: float

    @property
    def db(self) -> str:
        return self.config.db

    @property
    def env(self) -> Mapping[str, str]:
        return self.config.env

    def now(self) -> str:
        return utc_now()


def utc_now() -> str:
    """Now, in ctxkeep's fixed-width UTC form (records order by it as text)."""
    moment = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S.", time.gmtime(moment)) + f"{int(moment % 1 * 1_000_000):06d}Z"


def read_input(stream: IO[bytes]) -> dict[str, Any]:
    """The hook's JSON object; HookInputError when it is too large, not JSON or not an object."""
    data = stream.read(MAX_INPUT_BYTES + 1)
    if len(data) > MAX_INPUT_BYTES:
        raise HookInputError(f"hook input over {MAX_INPUT_BYTES:,} bytes")
    try:
        parsed = json.loads(data.decode("utf-8", "replace"))
    except json.JSONDecodeError as exc:
        raise HookInputError(f"hook input is not JSON ({exc.msg} at {exc.pos})") from None
    if not isinstance(parsed, dict):
        raise HookInputError("hook input is not a JSON object")
    return parsed


def session_id_of(data: Mapping[str, Any], key: str = "session_id") -> str:
    found = data.get(key)
    if not isinstance(found, str) or not 0 < len(found) <= 150 or not set(found) <= _SESSION_ID_CHARS:
        raise HookInputError(f"hook input has no usable {key} (letters, digits, '.', '_', '-'; at most 150)")
    return found


def where(data: Mapping[str, Any], config: HookConfig, session_key: str = "session_id") -> Where:
    cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else None
    return Where(
        config, resolve_project(config.env, hook_cwd=cwd), session_id_of(data, session_key), time.perf_counter()
    )


def write_log(path: str, line: str) -> None:
    """Append one line to the hook log at `path` (created 0600); a log that cannot be written is given up on
    silently: hooks never fail."""
    try:
        os.makedirs(os.path.dirname(path) or ".", mode=0o700, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a", encoding="utf-8") as log:
            stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            log.write(f"{stamp} {' '.join(without_bad_characters(line[:2000]).split())}\n")
    except (OSError, ValueError):
        pass


def log_for(env: Mapping[str, str], line: str) -> None:
    """`write_log` to the log `env` names: for a failure before (or while) the hook read its settings."""
    try:
        path = log_path(env)
    except (OSError, ValueError, RuntimeError):  # no home folder to put it in: given up on, as write_log does
        return
    write_log(path, line)


def describe(exc: Exception) -> str:
    """What failed, for the log, with what to do for the database failures people meet; never the hook's input."""
    text = str(exc)[:300]
    if "not a database" in text or "malformed" in text:
        return f"{text}: the file is not a valid ctxkeep database; restore it or point CTXKEEP_DB elsewhere"
    if "locked" in text or "busy" in text:
        return f"{text}: another process held the database longer than CTXKEEP_BUSY_TIMEOUT_MS"
    return text


def elapsed_ms(started: float) -> str:
    return f"{(time.perf_counter() - started) * 1000:.0f} ms"


def print_json(stream: IO[str], data: Mapping[str, Any]) -> None:
    """ASCII JSON on one line (a hook's stdout may not be UTF-8); a closed stdout is not a failure."""
    try:
        stream.write(json.dumps(data) + "\n")
        stream.flush()
    except (OSError, ValueError):
        pass
