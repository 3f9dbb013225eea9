"""`ctxkeep install gemini` / `uninstall gemini`: the server and the hooks in Gemini CLI's settings.json.

Scopes (geminicli.com/docs/reference/configuration, /docs/hooks/reference, /docs/tools/mcp-server):
- `user` (the default): `~/.gemini/settings.json`, absolute paths;
- `project`: `<project>/.gemini/settings.json`, the portable command `ctxkeep` (a file that can be committed).
Both need the project folder trusted: Gemini ignores project settings in an untrusted folder, and a headless run
there exits with code 55 (the doctor says how to trust it). The server entry is `mcpServers.ctxkeep` with
`"trust": true` (no confirmation per call: ctxkeep's tools write only ctxkeep's own store); the hooks are groups
under `hooks.<Event>` with a `name`, timeouts in milliseconds. A settings file that is not a JSON object, or holds
another `mcpServers.ctxkeep`, is refused untouched; uninstall restores the file byte for byte when nothing else
changed since.
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
from ctxkeep.clients.gemini.hooks import CLIENT, gemini_home

Scope = Literal["user", "project"]
EVENTS = ("SessionStart", "BeforeAgent", "AfterTool", "AfterAgent", "SessionEnd")
LISTING = {
    "files": "~/.gemini/settings.json (user) or .gemini/settings.json (project): mcpServers.ctxkeep and hooks; "
    "the folder must be trusted either way",
    "events": "SessionStart, BeforeAgent, AfterTool, AfterAgent, SessionEnd",
    "injects": "SessionStart additionalContext: the records' view (9,000 characters, counted with Gemini's HTML "
    "escapes); after a compression, the repair of its <state_snapshot> (4,000) on the next BeforeAgent or AfterTool",
    "offload": "large outputs go to evidence but stay in the context (Gemini 0.61 ignores tool_output)",
    "gate": "AfterAgent denies once (decision deny)",
    "missing": "no hook after compression and PreCompress has no summary (the snapshot is read from the chat file)",
}


def entry(executable: str, event: str) -> dict[str, Any]:
    """One hook group as Gemini's settings take it (a tool matcher for AfterTool; timeouts in milliseconds)."""
    hook = {
        "name": f"ctxkeep-{event}",
        "type": "command",
        "command": hook_command(executable, CLIENT, event),
        "timeout": 30_000,
    }
    return {"matcher": "*", "hooks": [hook]} if event == "AfterTool" else {"hooks": [hook]}


def server(executable: str) -> dict[str, Any]:
    return {"command": executable, "args": ["serve"], "trust": True}


def settings_path(scope: Scope, project: Path, env: Mapping[str, str]) -> Path:
    return (Path(gemini_home(env)) if scope == "user" else project / ".gemini") / "settings.json"


def plan(
    action: Literal["install", "uninstall"], scope: Scope, project: Path, env: Mapping[str, str], executable: str
) -> list[FileChange]:
    """The change to the scope's settings.json, server and hooks in one file (nothing is written)."""
    path = settings_path(scope, project, env)
    command = PORTABLE_COMMAND if scope == "project" else executable
    if action == "install":
        return [installed(path, add_server(command, server), add_hooks(command, CLIENT, EVENTS, entry))]
    return [uninstalled(path, remove_hooks(CLIENT, EVENTS, entry), remove_server(server))]


def notes(action: str, scope: Scope, project: Path) -> list[str]:
    if action != "install":
        return []
    return [
        f"Gemini CLI loads ctxkeep in {project} only once the folder is trusted: start `gemini` there and trust it, or "
        f'add "{project}": "TRUST_FOLDER" to ~/.gemini/trustedFolders.json (`ctxkeep doctor` checks).'
    ]
