"""What `ctxkeep doctor` reports for each client: one `Check` a line, and the helpers every client's checks use."""

from __future__ import annotations

import json
import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal


@dataclass(frozen=True)
class Check:
    name: str
    status: Literal["ok", "info", "warn", "fail"]
    detail: str


def executable_of(command: str) -> Path | None:
    try:
        return Path(shlex.split(command)[0])
    except (ValueError, IndexError):
        return None


def json_file(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def command_check(name: str, command: str) -> Check:
    exe = executable_of(command)
    if exe is None or not exe.is_absolute():
        return Check(name, "warn", f"{command!r}: not an absolute path (Claude Code runs hooks with its own PATH)")
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        return Check(
            name, "fail", f"{command!r}: {exe} is missing or not executable; run `ctxkeep install claude-code` again"
        )
    return Check(name, "ok", command)
