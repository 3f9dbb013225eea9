"""`ctxkeep install vscode` / `uninstall vscode`: the server in VS Code's mcp.json and the hooks in a hooks file of ctxkeep's own.

Scopes (code.visualstudio.com/docs/copilot/reference/mcp-configuration, /docs/copilot/customization/hooks):
- `project` (the default): `<project>/.vscode/mcp.json` (`{"servers": {"ctxkeep": {"type": "stdio", "command",
  "args"}}}`) and `<project>/.github/hooks/ctxkeep.json`, the portable command `ctxkeep` (files that can be committed);
- `user`: the user profile's `mcp.json` (e.g. ~/.config/Code/User/mcp.json) and `~/.copilot/hooks/ctxkeep.json`,
  absolute paths.
A hooks file is `{"hooks": {"<Event>": [{"type": "command", "command", "timeout"}]}}` (timeout in seconds). VS Code
also runs the hooks in `.claude/settings.json`; ctxkeep installs none there for VS Code (they are Claude Code's).
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
    vscode_user_dir,
)
from ctxkeep.clients.vscode.hooks import CLIENT, HANDLERS

Scope = Literal["project", "user"]
EVENTS = tuple(HANDLERS)
LISTING = {
    "files": ".vscode/mcp.json + .github/hooks/ctxkeep.json (project) or the profile's mcp.json + ~/.copilot/hooks/ctxkeep.json (user)",
    "events": ", ".join(EVENTS),
    "injects": "SessionStart additionalContext: the records' view (9,000 characters; VS Code fires it at the first "
    'prompt with source "new", so only a session it resumes under the same id gets records)',
    "offload": "large outputs go to evidence but stay in the context (PostToolUse cannot replace them)",
    "gate": "Stop blocks once (hookSpecificOutput.decision block)",
    "missing": "no compaction summary (PreCompact takes no context); not run here: no VS Code, files checked against the docs",
}


def entry(executable: str, event: str) -> dict[str, Any]:
    return {"type": "command", "command": hook_command(executable, CLIENT, event), "timeout": 30}


def server(executable: str) -> dict[str, Any]:
    return {"type": "stdio", "command": executable, "args": ["serve"]}


def paths(scope: Scope, project: Path, env: Mapping[str, str]) -> tuple[Path, Path]:
    """(mcp.json, ctxkeep's hooks file) of a scope."""
    if scope == "user":
        return vscode_user_dir(env) / "mcp.json", Path(
            env.get("HOME") or Path.home()
        ) / ".copilot" / "hooks" / "ctxkeep.json"
    return project / ".vscode" / "mcp.json", project / ".github" / "hooks" / "ctxkeep.json"


def plan(
    action: Literal["install", "uninstall"], scope: Scope, project: Path, env: Mapping[str, str], executable: str
) -> list[FileChange]:
    mcp, hooks = paths(scope, project, env)
    command = PORTABLE_COMMAND if scope == "project" else executable
    if action == "install":
        return [
            installed(mcp, add_server(command, server, "servers")),
            installed(hooks, add_hooks(command, CLIENT, EVENTS, entry)),
        ]
    return [uninstalled(mcp, remove_server(server, "servers")), uninstalled(hooks, remove_hooks(CLIENT, EVENTS, entry))]


def notes(action: str, scope: Scope, project: Path) -> list[str]:
    return (
        [
            "VS Code asks you to trust the ctxkeep server the first time it starts it; hooks need agent mode and "
            "`chat.hookFilesLocations` left at its default."
        ]
        if action == "install"
        else []
    )
