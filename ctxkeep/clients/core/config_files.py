"""Config files of agent clients, edited safely: read as JSON objects (refused when invalid, never touched), changed
in memory, shown as a diff, written atomically with a backup, and restored byte for byte on uninstall (the backup then removed)."""

from __future__ import annotations

import difflib
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxkeep.errors import InvalidInput

BACKUP_SUFFIX = ".ctxkeep.bak"


@dataclass(frozen=True)
class FileChange:
    path: Path
    before: str | None  # None: the file does not exist
    after: str | None  # None: the file is to be deleted
    backup: bool = True  # False: `before` already holds ctxkeep's entries, so an earlier backup of the original stays

    @property
    def changed(self) -> bool:
        return self.before != self.after


def find_executable() -> str:
    """The absolute path of the installed `ctxkeep` command."""
    candidates = [
        Path(sys.argv[0]),
        Path(sys.executable).parent / "ctxkeep",
        Path(shutil.which("ctxkeep") or "ctxkeep"),
    ]
    for candidate in candidates:
        if candidate.name == "ctxkeep" and candidate.is_file() and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    raise InvalidInput(
        "cannot find the installed `ctxkeep` executable; install ctxkeep with pip (pip install ctxkeep) and run "
        "this command through it"
    )


def read_json(path: Path) -> tuple[str | None, dict[str, Any]]:
    """The file's text and its JSON object ({} when absent); InvalidInput when it is not a JSON object."""
    if not path.exists():
        return None, {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            f"{path} cannot be read as UTF-8 text ({exc}); fix or move it, then run this again (nothing was changed)"
        ) from None
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise InvalidInput(
            f"{path} is not valid JSON ({exc}); fix or move it, then run this again (nothing was changed)"
        ) from None
    if not isinstance(data, dict):
        raise InvalidInput(
            f"{path} does not hold a JSON object; fix or move it, then run this again (nothing was changed)"
        )
    return text, data


def json_object(parent: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = parent.setdefault(key, {})
    if not isinstance(value, dict):
        raise InvalidInput(f"{path}: {key!r} is not a JSON object; fix it, then run this again (nothing was changed)")
    return value


def json_list(parent: dict[str, Any], key: str, path: Path, where: str = "") -> list[Any]:
    value = parent.setdefault(key, [])
    if not isinstance(value, list):
        raise InvalidInput(
            f"{path}: {where}{key} is not a JSON list; fix it, then run this again (nothing was changed)"
        )
    return value


def dump_json(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def restored(path: Path, before: str | None, data: dict[str, Any]) -> str | None:
    """The file after uninstalling: the backup's bytes when they say the same, nothing when install created it."""
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if backup.exists():
        try:
            if json.loads(backup.read_text(encoding="utf-8") or "{}") == data:
                return backup.read_text(encoding="utf-8")
        except ValueError:
            pass
    if not data and not backup.exists():
        return None
    return before if before is not None and json.loads(before or "{}") == data else dump_json(data)


def apply(changes: list[FileChange], backup: bool) -> list[str]:
    """Write the changes (a backup of each existing file first, when `backup`); one line per file. Without `backup`
    (an uninstall), a backup whose bytes the file has again is removed; one of a file changed since is kept."""
    lines = []
    for change in changes:
        if not change.changed:
            lines.append(f"unchanged {change.path}" + ("" if backup else _settle_backup(change)))
            continue
        if change.after is None:
            change.path.unlink()
            lines.append(f"removed {change.path} (ctxkeep had created it)" + ("" if backup else _settle_backup(change)))
            continue
        if backup and change.backup and change.before is not None:
            change.path.with_name(change.path.name + BACKUP_SUFFIX).write_text(change.before, encoding="utf-8")
        change.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = change.path.with_name(change.path.name + ".ctxkeep.tmp")
        temporary.write_text(change.after, encoding="utf-8")
        os.replace(temporary, change.path)  # never a half-written settings file
        note = (
            (f" (backup {change.path.name}{BACKUP_SUFFIX})" if change.before is not None else "")
            if backup
            else _settle_backup(change)
        )
        lines.append(f"wrote {change.path}{note}")
    return lines


def _settle_backup(change: FileChange) -> str:
    """After an uninstall: remove the backup when the file is back to its bytes (or gone with nothing to restore);
    what to add to the file's line."""
    backup = change.path.with_name(change.path.name + BACKUP_SUFFIX)
    if not backup.is_file():
        return ""
    try:
        original = backup.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        original = None
    if original is not None and (change.after == original or (change.after is None and not original.strip())):
        backup.unlink()
        return f" (the original, restored from {backup.name}, which is removed)"
    return f" (kept {backup.name}: the file changed since install; delete it once you no longer need it)"


def diff(change: FileChange) -> str:
    return "".join(
        difflib.unified_diff(
            (change.before or "").splitlines(True),
            (change.after or "").splitlines(True),
            str(change.path),
            f"{change.path} (after)",
        )
    )
