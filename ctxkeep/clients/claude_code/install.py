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

import json
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any, Literal

from ctxkeep.clients.core.config_files import (
    BACKUP_SUFFIX,
    FileChange,
    apply,
    diff,
    dump_json,
    find_executable,
    json_list,
    json_object,
    read_json,
    restored,
)

Scope = Literal["project", "user"]
SERVER_NAME = "ctxkeep"
__all__ = ["HOOKS", "FileChange", "Scope", "apply", "diff", "find_executable", "plan", "run_claude", "user_mcp_command"]
HOOKS = {"PreCompact": ("pre-compact", None), "SessionStart": ("session-start", "compact|resume")}


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


def _without_our_hooks(groups: list[Any], hook: str, matcher: str | None) -> list[Any]:
    return [group for group in groups if not _is_our_group(group, hook, matcher)]


def settings_with_hooks(path: Path, executable: str) -> FileChange:
    before, data = read_json(path)
    hooks = json_object(data, "hooks", path)
    for event, (hook, matcher) in HOOKS.items():
        groups = _without_our_hooks(json_list(hooks, event, path, where="hooks."), hook, matcher)
        ours: dict[str, Any] = {"hooks": [{"type": "command", "command": hook_command(executable, hook)}]}
        if matcher:
            ours = {"matcher": matcher, **ours}
        hooks[event] = groups + [ours]
    return FileChange(path, before, dump_json(data))


def settings_without_hooks(path: Path) -> FileChange:
    before, data = read_json(path)
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        for event, (hook, matcher) in HOOKS.items():
            if isinstance(hooks.get(event), list):
                hooks[event] = _without_our_hooks(hooks[event], hook, matcher)
                if not hooks[event]:
                    del hooks[event]
        if not hooks:
            del data["hooks"]
    return FileChange(path, before, restored(path, before, data))


def mcp_with_server(path: Path, executable: str) -> FileChange:
    """The server registered under `ctxkeep`; an existing entry keeps its other keys (env, …), only command and args change."""
    before, data = read_json(path)
    servers = json_object(data, "mcpServers", path)
    existing = servers.get(SERVER_NAME)
    servers[SERVER_NAME] = {**(existing if isinstance(existing, dict) else {}), "command": executable, "args": ["serve"]}
    return FileChange(path, before, dump_json(data))


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
    before, data = read_json(path)
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
    return FileChange(path, before, restored(path, before, data))


def plan(action: Literal["install", "uninstall"], scope: Scope, project: Path, home: Path, executable: str) -> list[FileChange]:
    """The file changes an install or uninstall makes (nothing is written)."""
    settings = (project if scope == "project" else home) / ".claude" / "settings.json"
    if action == "install":
        changes = [settings_with_hooks(settings, executable)]
        return changes + ([mcp_with_server(project / ".mcp.json", executable)] if scope == "project" else [])
    changes = [settings_without_hooks(settings)]
    return changes + ([mcp_without_server(project / ".mcp.json")] if scope == "project" else [])


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
