"""`ctxkeep install cline` / `uninstall cline`: the server in Cline's MCP settings and one hook script per event.

Scopes (docs.cline.bot/customization/hooks, docs.cline.bot/mcp/configuring-mcp-servers):
- `project` (the default): the hook scripts in `<project>/.clinerules/hooks/`, each running the portable `ctxkeep`
  (files that can be committed);
- `user`: the hook scripts in `~/Documents/Cline/Hooks/`, absolute paths.
Both register the server in `cline_mcp_settings.json` in VS Code's globalStorage for Cline
(`…/Code/User/globalStorage/saoudrizwan.claude-dev/settings/`): Cline has no project MCP file, so that entry is
always absolute. A hook is an executable file named after its event, no extension; a file of that name that ctxkeep
did not write is refused, never overwritten. Cline runs hooks only once they are enabled in its Hooks tab
(macOS and Linux).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from ctxkeep.clients.cline.hooks import CLIENT, HANDLERS
from ctxkeep.clients.core.config_files import FileChange
from ctxkeep.clients.core.install_files import (
    PORTABLE_COMMAND,
    add_server,
    hook_command,
    installed,
    own_file,
    remove_server,
    uninstalled,
    vscode_user_dir,
)

Scope = Literal["project", "user"]
EVENTS = tuple(HANDLERS)
MARK = "# ctxkeep: written by `ctxkeep install cline`; `ctxkeep uninstall cline` removes it"
LISTING = {
    "files": "cline_mcp_settings.json (VS Code globalStorage) + executable hooks in .clinerules/hooks/ (project) or "
    "~/Documents/Cline/Hooks/ (user)",
    "events": ", ".join(EVENTS),
    "injects": "TaskResume contextModification: the records' view (9,000 characters)",
    "offload": "large outputs go to evidence but stay in the context",
    "gate": "none: Cline has no stop event that can block",
    "missing": "no compaction summary (PreCompact shows none); hooks must be enabled in Cline's Hooks tab; not run "
    "here: no Cline, files checked against the docs",
}


def script(executable: str, event: str) -> str:
    return f"#!/bin/sh\n{MARK}\nexec {hook_command(executable, CLIENT, event)}\n"


def server(executable: str) -> dict[str, Any]:
    return {"command": executable, "args": ["serve"], "disabled": False}


def mcp_settings(env: Mapping[str, str]) -> Path:
    return vscode_user_dir(env) / "globalStorage" / "saoudrizwan.claude-dev" / "settings" / "cline_mcp_settings.json"


def hooks_folder(scope: Scope, project: Path, env: Mapping[str, str]) -> Path:
    if scope == "user":
        return Path(env.get("HOME") or Path.home()) / "Documents" / "Cline" / "Hooks"
    return project / ".clinerules" / "hooks"


def _ours(path: Path, event: str) -> str | None:
    """The script at `path` when it is one ctxkeep wrote for `event` (from any install path)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    lines = text.splitlines()
    try:
        command = shlex.split(lines[2][len("exec ") :]) if len(lines) == 3 and lines[2].startswith("exec ") else []
    except ValueError:
        return None
    return text if len(command) == 4 and text == script(command[0], event) else None


def plan(
    action: Literal["install", "uninstall"], scope: Scope, project: Path, env: Mapping[str, str], executable: str
) -> list[FileChange]:
    folder = hooks_folder(scope, project, env)
    command = PORTABLE_COMMAND if scope == "project" else executable
    if action == "install":
        changes = [installed(mcp_settings(env), add_server(executable, server))]
        for event in EVENTS:
            path = folder / event
            current = _ours(path, event)
            changes.append(
                FileChange(path, current, script(command, event))
                if current
                else own_file(path, script(command, event), "install")
            )
        return changes
    changes = [uninstalled(mcp_settings(env), remove_server(server))]
    for event in EVENTS:
        current = _ours(folder / event, event)
        changes.append(FileChange(folder / event, current, None))  # None when not ours: another file of that name stays
    return changes


def finish(changes: list[FileChange]) -> None:
    """Make the hook scripts executable (Cline runs only executable files)."""
    for change in changes:
        if change.after is not None and change.after.startswith("#!/bin/sh\n" + MARK) and change.path.exists():
            os.chmod(change.path, 0o755)


def notes(action: str, scope: Scope, project: Path) -> list[str]:
    return (
        [
            "Enable hooks in Cline's Hooks tab (Cline runs none until then); restart Cline's MCP servers to start ctxkeep."
        ]
        if action == "install"
        else []
    )
