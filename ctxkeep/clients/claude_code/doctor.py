"""The doctor's Claude Code checks: where the server is registered, which hooks are installed, whether their
executables exist."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from ctxkeep.clients.claude_code.install import HOOKS
from ctxkeep.clients.core.checks import Check, command_check, json_file


def claude_code_checks(project: Path, home: Path) -> list[Check]:
    """Where the server is registered and which hooks are installed, with their executables checked."""
    checks: list[Check] = []
    for path in (project / ".mcp.json", home / ".claude.json"):
        servers = (json_file(path) or {}).get("mcpServers") if path.exists() else None
        server = servers.get("ctxkeep") if isinstance(servers, dict) else None
        if isinstance(server, dict):
            found_args = server.get("args")
            args: list[Any] = found_args if isinstance(found_args, list) else []
            checks.append(command_check(f"mcp server in {path}", " ".join([shlex.quote(str(server.get("command", "")))] + [str(a) for a in args])))
    if not checks:
        checks.append(Check("mcp server", "warn", "not registered (ctxkeep install claude-code)"))
    found: set[str] = set()
    for path in (project / ".claude" / "settings.json", project / ".claude" / "settings.local.json", home / ".claude" / "settings.json"):
        data = json_file(path) if path.exists() else None
        if path.exists() and data is None:
            checks.append(Check(f"settings {path}", "fail", "not valid JSON: Claude Code ignores it"))
        found_hooks = (data or {}).get("hooks")
        hooks: dict[str, Any] = found_hooks if isinstance(found_hooks, dict) else {}
        for event, (hook, _) in HOOKS.items():
            for group in hooks.get(event, []) if isinstance(hooks.get(event), list) else []:
                for entry in group.get("hooks", []) if isinstance(group, dict) else []:
                    command = str(entry.get("command", "")) if isinstance(entry, dict) else ""
                    if command.endswith(f" hook {hook}") and "ctxkeep" in command:
                        found.add(event)
                        checks.append(command_check(f"{event} hook in {path}", command))
    missing = [event for event in HOOKS if event not in found]
    if missing:
        checks.append(Check("hooks", "warn", f"not installed: {', '.join(missing)} (ctxkeep install claude-code)"))
    return checks
