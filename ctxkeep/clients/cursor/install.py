"""`ctxkeep install cursor` / `uninstall cursor`: the server in Cursor's mcp.json and the hooks in its hooks.json.

Scopes (cursor.com/docs/mcp, cursor.com/docs/agent/hooks):
- `project` (the default): `<project>/.cursor/mcp.json` and `<project>/.cursor/hooks.json`, the portable command
  `ctxkeep` (files that can be committed);
- `user`: `~/.cursor/mcp.json` and `~/.cursor/hooks.json`, absolute paths.
mcp.json holds `{"mcpServers": {"ctxkeep": {"command", "args"}}}`; hooks.json `{"version": 1, "hooks": {"<event>":
[{"command": …}]}}`. A file that is not a JSON object, or holds another `mcpServers.ctxkeep`, is refused untouched;
uninstall restores each file byte for byte when nothing else changed since, and removes the files install created.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from ctxkeep.clients.core.config_files import FileChange
from ctxkeep.clients.core.install_files import (
    PORTABLE_COMMAND,
    add_hooks,
    add_server,
    hook_command,
    installed,
    remove_hooks,
    remove_server,
    uninstalled,
)
from ctxkeep.clients.cursor.hooks import CLIENT, HANDLERS

Scope = Literal["project", "user"]
EVENTS = tuple(HANDLERS)
SKELETON = {"version": 1}
LISTING = {
    "files": ".cursor/mcp.json + .cursor/hooks.json (project) or ~/.cursor/mcp.json + ~/.cursor/hooks.json (user)",
    "events": ", ".join(EVENTS),
    "injects": "sessionStart additional_context: the records' view (9,000 characters)",
    "offload": "large shell and MCP outputs go to evidence but stay in the context (the after* hooks cannot change them)",
    "gate": "stop answers followup_message once (Cursor sends it as the next user message)",
    "missing": "no compaction summary (preCompact is observe-only); not run here: no Cursor CLI, files checked against the docs",
}


def entry(executable: str, event: str) -> dict[str, Any]:
    return {"command": hook_command(executable, CLIENT, event)}


def server(executable: str) -> dict[str, Any]:
    return {"command": executable, "args": ["serve"]}


def folder(scope: Scope, project: Path, env: Mapping[str, str]) -> Path:
    return (Path(env.get("HOME") or Path.home()) if scope == "user" else project) / ".cursor"


def plan(
    action: Literal["install", "uninstall"], scope: Scope, project: Path, env: Mapping[str, str], executable: str
) -> list[FileChange]:
    base = folder(scope, project, env)
    command = PORTABLE_COMMAND if scope == "project" else executable
    if action == "install":
        return [
            installed(base / "mcp.json", add_server(command, server)),
            installed(base / "hooks.json", add_hooks(command, CLIENT, EVENTS, entry, skeleton=SKELETON)),
        ]
    return [
        uninstalled(base / "mcp.json", remove_server(server)),
        uninstalled(base / "hooks.json", remove_hooks(CLIENT, EVENTS, entry, skeleton=SKELETON)),
    ]


def notes(action: str, scope: Scope, project: Path) -> list[str]:
    return (
        ["Cursor asks once before it starts a new MCP server: enable ctxkeep in Settings > MCP."]
        if action == "install"
        else []
    )
