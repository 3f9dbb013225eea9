"""`ctxkeep install claude-code` / `uninstall claude-code`: register the server and the hooks in Claude Code.

Project scope writes the server into `<project>/.mcp.json` and the hooks into
`<project>/.claude/settings.json`; user scope writes the hooks into `~/.claude/settings.json`
and registers the server with `claude mcp add --scope user` (or prints that command when
`claude` is not installed). Commands use the absolute path of the `ctxkeep` executable: hooks
run with Claude Code's PATH. Installing is idempotent and keeps every other setting and hook; a
file that changes is backed up first (`<file>.ctxkeep.bak`); a file that is not valid JSON is
refused and left untouched. Uninstalling removes exactly what installing added, and restores a
file byte for byte when nothing else in it changed since.
"""

from __future__ import annotations

import difflib
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ctxkeep.errors import InvalidInput

Scope = Literal["project", "user"]
SERVER_NAME = "ctxkeep"
HOOKS = {"PreCompact": ("pre-compact", None), "SessionStart": ("session-start", "compact|resume")}
BACKUP_SUFFIX = ".ctxkeep.bak"


@dataclass(frozen=True)
class FileChange:
    path: Path
    before: str | None  # None: the file does not exist
    after: str | None  # None: the file is to be deleted

    @property
    def changed(self) -> bool:
        return self.before != self.after


def find_executable() -> str:
    """The absolute path of the installed `ctxkeep` command."""
    candidates = [Path(sys.argv[0]), Path(sys.executable).parent / "ctxkeep", Path(shutil.which("ctxkeep") or "ctxkeep")]
    for candidate in candidates:
        if candidate.name == "ctxkeep" and candidate.is_file() and os.access(candidate, os.X_OK):
            return os.path.abspath(candidate)
    raise InvalidInput("cannot find the installed `ctxkeep` executable; install ctxkeep with pip (pip install ctxkeep) and run "
                       "this command through it")


def hook_command(executable: str, hook: str) -> str:
    return f"{shlex.quote(executable)} hook {hook}"


def _is_our_command(command: Any, hook: str) -> bool:
    """A command an install wrote: `<absolute path>/ctxkeep hook <hook>`, from any install path (a reinstall from
    elsewhere replaces it). A PATH-relative `ctxkeep hook …` someone wrote by hand is not ours."""
    if not isinstance(command, str):
        return False
    try:
        parts = shlex.split(command)
    except ValueError:  # unbalanced quotes: somebody's own shell line
        return False
    return (len(parts) == 3 and parts[1:] == ["hook", hook] and Path(parts[0]).is_absolute() and Path(parts[0]).name == "ctxkeep"
            and command == hook_command(parts[0], hook))


def _is_our_group(group: Any, hook: str, matcher: str | None) -> bool:
    """A hook group exactly as install writes it (same keys, same matcher, one command of ours)."""
    if not isinstance(group, dict) or set(group) != ({"hooks", "matcher"} if matcher else {"hooks"}):
        return False
    inner = group["hooks"]
    return (group.get("matcher") == matcher and isinstance(inner, list) and len(inner) == 1 and isinstance(inner[0], dict)
            and set(inner[0]) == {"type", "command"} and inner[0]["type"] == "command" and _is_our_command(inner[0]["command"], hook))


def _read(path: Path) -> tuple[str | None, dict[str, Any]]:
    """The file's text and its JSON object ({} when absent); InvalidInput when it is not a JSON object."""
    if not path.exists():
        return None, {}
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(f"{path} cannot be read as UTF-8 text ({exc}); fix or move it, then run this again (nothing was changed)") from None
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError as exc:
        raise InvalidInput(f"{path} is not valid JSON ({exc}); fix or move it, then run this again (nothing was changed)") from None
    if not isinstance(data, dict):
        raise InvalidInput(f"{path} does not hold a JSON object; fix or move it, then run this again (nothing was changed)")
    return text, data


def _object(parent: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = parent.setdefault(key, {})
    if not isinstance(value, dict):
        raise InvalidInput(f"{path}: {key!r} is not a JSON object; fix it, then run this again (nothing was changed)")
    return value


def _list(parent: dict[str, Any], key: str, path: Path) -> list[Any]:
    value = parent.setdefault(key, [])
    if not isinstance(value, list):
        raise InvalidInput(f"{path}: hooks.{key} is not a JSON list; fix it, then run this again (nothing was changed)")
    return value


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _without_our_hooks(groups: list[Any], hook: str, matcher: str | None) -> list[Any]:
    return [group for group in groups if not _is_our_group(group, hook, matcher)]


def settings_with_hooks(path: Path, executable: str) -> FileChange:
    before, data = _read(path)
    hooks = _object(data, "hooks", path)
    for event, (hook, matcher) in HOOKS.items():
        groups = _without_our_hooks(_list(hooks, event, path), hook, matcher)
        ours: dict[str, Any] = {"hooks": [{"type": "command", "command": hook_command(executable, hook)}]}
        if matcher:
            ours = {"matcher": matcher, **ours}
        hooks[event] = groups + [ours]
    return FileChange(path, before, _dump(data))


def settings_without_hooks(path: Path) -> FileChange:
    before, data = _read(path)
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        for event, (hook, matcher) in HOOKS.items():
            if isinstance(hooks.get(event), list):
                hooks[event] = _without_our_hooks(hooks[event], hook, matcher)
                if not hooks[event]:
                    del hooks[event]
        if not hooks:
            del data["hooks"]
    return FileChange(path, before, _restored(path, before, data))


def mcp_with_server(path: Path, executable: str) -> FileChange:
    """The server registered under `ctxkeep`; an existing entry keeps its other keys (env, …), only command and args change."""
    before, data = _read(path)
    servers = _object(data, "mcpServers", path)
    existing = servers.get(SERVER_NAME)
    servers[SERVER_NAME] = {**(existing if isinstance(existing, dict) else {}), "command": executable, "args": ["serve"]}
    return FileChange(path, before, _dump(data))


def _is_our_server(entry: Any) -> bool:
    """An entry exactly as install writes it."""
    return (isinstance(entry, dict) and set(entry) == {"command", "args"} and Path(str(entry["command"])).is_absolute()
            and Path(str(entry["command"])).name == "ctxkeep" and entry["args"] == ["serve"])


def _backed_up_entry(path: Path) -> Any:
    """The `ctxkeep` server entry as it was before install changed the file (None when there was none)."""
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    try:
        servers = json.loads(backup.read_text(encoding="utf-8")).get("mcpServers") if backup.exists() else None
    except (OSError, ValueError, AttributeError):
        return None
    return servers.get(SERVER_NAME) if isinstance(servers, dict) else None


def mcp_without_server(path: Path) -> FileChange:
    """Our entry removed; an entry install only updated goes back to what it was before."""
    before, data = _read(path)
    servers = data.get("mcpServers")
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    original = _backed_up_entry(path)
    if isinstance(servers, dict) and entry is not None and (_is_our_server(entry) or original is not None):
        if original is not None:
            servers[SERVER_NAME] = original
        else:
            del servers[SERVER_NAME]
        if not servers:
            del data["mcpServers"]
    return FileChange(path, before, _restored(path, before, data))


def _restored(path: Path, before: str | None, data: dict[str, Any]) -> str | None:
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
    return before if before is not None and json.loads(before or "{}") == data else _dump(data)


def plan(action: Literal["install", "uninstall"], scope: Scope, project: Path, home: Path, executable: str) -> list[FileChange]:
    """The file changes an install or uninstall makes (nothing is written)."""
    settings = (project if scope == "project" else home) / ".claude" / "settings.json"
    if action == "install":
        changes = [settings_with_hooks(settings, executable)]
        return changes + ([mcp_with_server(project / ".mcp.json", executable)] if scope == "project" else [])
    changes = [settings_without_hooks(settings)]
    return changes + ([mcp_without_server(project / ".mcp.json")] if scope == "project" else [])


def apply(changes: list[FileChange], backup: bool) -> list[str]:
    """Write the changes (a backup of each existing file first, when `backup`); one line per file."""
    lines = []
    for change in changes:
        if not change.changed:
            lines.append(f"unchanged {change.path}")
            continue
        if change.after is None:
            change.path.unlink()
            lines.append(f"removed {change.path} (ctxkeep had created it)")
            continue
        if backup and change.before is not None:
            change.path.with_name(change.path.name + BACKUP_SUFFIX).write_text(change.before, encoding="utf-8")
        change.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = change.path.with_name(change.path.name + ".ctxkeep.tmp")
        temporary.write_text(change.after, encoding="utf-8")
        os.replace(temporary, change.path)  # never a half-written settings file
        lines.append(f"wrote {change.path}" + (f" (backup {change.path.name}{BACKUP_SUFFIX})" if backup and change.before is not None else ""))
    return lines


def diff(change: FileChange) -> str:
    return "".join(difflib.unified_diff((change.before or "").splitlines(True), (change.after or "").splitlines(True),
                                       str(change.path), f"{change.path} (after)"))


def user_mcp_command(action: Literal["install", "uninstall"], executable: str) -> list[str]:
    if action == "install":
        return ["claude", "mcp", "add", "--scope", "user", SERVER_NAME, "--", executable, "serve"]
    return ["claude", "mcp", "remove", "--scope", "user", SERVER_NAME]


def run_claude(command: list[str]) -> str:
    """Run the `claude` CLI when it is installed; otherwise say which command to run."""
    shown = " ".join(shlex.quote(part) for part in command)
    if shutil.which("claude") is None:
        return f"`claude` is not on PATH; run this yourself: {shown}"
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    if done.returncode != 0:
        return f"{shown} failed ({done.returncode}): {(done.stderr or done.stdout).strip()[:500]}"
    return f"ran: {shown}"
