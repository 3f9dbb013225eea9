"""The doctor's Claude Code checks: where the server is registered (and whether a project server still waits for
approval), where each registered server keeps its data, which hooks are installed at which scope, whether their
commands resolve."""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ctxkeep.clients.claude_code.install import (
    HOOKS,
    PORTABLE_COMMAND,
    Scope,
    double_install,
    registered,
    settings_path,
    state_file,
)
from ctxkeep.clients.core.checks import Check, command_check, json_file
from ctxkeep.clients.core.server_entry import data_check
from ctxkeep.project import claude_config_dir
from ctxkeep.tool_names import SERVER_NAME


def _server_command(server: dict[str, Any]) -> str:
    args = server.get("args") if isinstance(server.get("args"), list) else []
    return " ".join([shlex.quote(str(server.get("command", "")))] + [str(a) for a in args or []])


def _resolves(name: str, command: str) -> Check:
    """A portable `ctxkeep …` command resolves on this machine's PATH; an absolute one must exist."""
    if shlex.split(command)[:1] == [PORTABLE_COMMAND]:
        found = shutil.which(PORTABLE_COMMAND)
        return Check(
            name,
            "ok" if found else "fail",
            f"{command!r} runs {found}"
            if found
            else f"{command!r}: `ctxkeep` is not on PATH here; install it with pipx, or put its environment's bin on PATH",
        )
    return command_check(name, command)


def _approval(project: Path, env: Mapping[str, str], settings: list[dict[str, Any]]) -> Check:
    """Whether Claude Code will start the project's `.mcp.json` server without asking (interactive sessions ask once)."""
    state = json_file(state_file(env)) or {}
    mine = state.get("projects", {}).get(str(project), {}) if isinstance(state.get("projects"), dict) else {}
    sources = [mine if isinstance(mine, dict) else {}, *settings]
    if any(SERVER_NAME in (s.get("disabledMcpjsonServers") or []) for s in sources):
        return Check(
            "project server",
            "fail",
            "disabled in Claude Code (disabledMcpjsonServers); run `claude mcp reset-project-choices`",
        )
    if any(
        s.get("enableAllProjectMcpServers") is True or SERVER_NAME in (s.get("enabledMcpjsonServers") or [])
        for s in sources
    ):
        return Check("project server", "ok", "approved in Claude Code")
    return Check(
        "project server",
        "warn",
        "pending approval: start `claude` in this project and approve the ctxkeep server, "
        'or add "enabledMcpjsonServers": ["ctxkeep"] to .claude/settings.local.json',
    )


def _servers(project: Path, env: Mapping[str, str], settings: list[dict[str, Any]]) -> list[Check]:
    checks = []
    registered_at: tuple[Scope, ...] = ("local", "user")
    for scope in registered_at:
        entry = registered(scope, project, env)
        if entry is not None:
            checks.append(_resolves(f"mcp server ({scope} scope)", _server_command(entry)))
            checks.append(data_check(f"data of the mcp server ({scope} scope)", entry, env))
    servers = (json_file(project / ".mcp.json") or {}).get("mcpServers")
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    if isinstance(entry, dict):
        checks += [
            _resolves(f"mcp server in {project / '.mcp.json'}", _server_command(entry)),
            data_check(f"data of the mcp server in {project / '.mcp.json'}", entry, env),
            _approval(project, env, settings),
        ]
    return checks or [Check("mcp server", "warn", "not registered (ctxkeep install claude-code)")]


def _hooks(path: Path, data: dict[str, Any] | None, found: set[str]) -> list[Check]:
    checks = []
    hooks = data.get("hooks") if isinstance(data, dict) else None
    for event, (hook, _) in HOOKS.items():
        groups = hooks.get(event) if isinstance(hooks, dict) else None
        for group in groups if isinstance(groups, list) else []:
            for entry in (
                group.get("hooks", []) if isinstance(group, dict) and isinstance(group.get("hooks"), list) else []
            ):
                command = str(entry.get("command", "")) if isinstance(entry, dict) else ""
                if command.endswith(f" hook {hook}") and "ctxkeep" in command:
                    found.add(event)
                    checks.append(_resolves(f"{event} hook in {path}", command))
    return checks


def _server_anywhere(project: Path, env: Mapping[str, str]) -> bool:
    servers = (json_file(project / ".mcp.json") or {}).get("mcpServers")
    scopes: tuple[Scope, ...] = ("local", "user")
    return any(registered(scope, project, env) is not None for scope in scopes) or (
        isinstance(servers, dict) and SERVER_NAME in servers
    )


def checks(project: Path, env: Mapping[str, str]) -> list[Check]:
    """Where the server is registered and which hooks are installed, with their commands checked, and a double
    install; nothing when ctxkeep is not installed in Claude Code (no server, no hook of ours at any scope)."""
    config = Path(claude_config_dir(env))
    checks: list[Check] = []
    settings: list[dict[str, Any]] = []
    found: set[str] = set()
    scopes: tuple[Scope, ...] = ("project", "local", "user")
    for scope in scopes:
        path = settings_path(scope, project, config)
        data = json_file(path) if path.exists() else None
        if path.exists() and data is None and "ctxkeep" in path.read_text(encoding="utf-8", errors="replace"):
            checks.append(Check(f"settings {path}", "fail", "not valid JSON: Claude Code ignores it"))
        settings.append(data or {})
        checks += _hooks(path, data, found)
    if not checks and not _server_anywhere(project, env):
        return []
    missing = [event for event in HOOKS if event not in found]
    if missing:
        checks.append(Check("hooks", "warn", f"not installed: {', '.join(missing)} (ctxkeep install claude-code)"))
    doubled = double_install(project, config)
    if doubled:
        checks.append(Check("hooks twice", "warn", doubled))
    return _servers(project, env, settings) + checks
