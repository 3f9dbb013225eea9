"""The doctor's Codex checks: where ctxkeep is installed (user and project scope), whether the commands resolve, and
what Codex itself still has to allow: hooks it has not trusted yet (Codex skips them silently), and a project whose
`.codex/` Codex does not load because the project is not trusted. Each warning says the exact step that fixes it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

from ctxkeep.clients.codex import toml_reader
from ctxkeep.clients.codex.install import BEGIN, EVENTS, paths, Scope
from ctxkeep.clients.core.checks import Check, json_file
from ctxkeep.clients.core.install_files import found_hooks, resolves
from ctxkeep.clients.core.server_entry import data_check

CLIENT = "codex"


def _toml(path: Path) -> dict[str, Any] | None:
    try:
        return toml_reader.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _snake(event: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower()


def _untrusted(hooks_path: Path, data: dict[str, Any], user_config: dict[str, Any] | None) -> list[str]:
    """Events whose ctxkeep hook has no trusted hash in the user config.toml (`hooks.state."<file>:<event>:<group>:0"`)."""
    state = (user_config or {}).get("hooks", {}).get("state", {})
    missing = []
    for event in EVENTS:
        groups = data.get("hooks", {}).get(event, []) if isinstance(data.get("hooks"), dict) else []
        ours = [n for n, g in enumerate(groups) if found_hooks({"hooks": {event: [g]}}, CLIENT, [event])]
        keys = [f"{hooks_path}:{_snake(event)}:{n}:0" for n in ours]
        if ours and not any(isinstance(state.get(k), dict) and state[k].get("trusted_hash") for k in keys):
            missing.append(event)
    return missing


def checks(project: Path, env: Mapping[str, str]) -> list[Check]:
    """One check a line for every scope where ctxkeep is installed in Codex (none when it is not installed)."""
    found_checks: list[Check] = []
    user_config = _toml(paths("user", project, env)[0])
    for scope in get_args(Scope):
        config, hooks = paths(scope, project, env)
        text = config.read_text(encoding="utf-8", errors="replace") if config.exists() else ""
        data = json_file(hooks) if hooks.exists() else None
        found = found_hooks(data, CLIENT, list(EVENTS)) if data else {}
        if BEGIN not in text and not found:
            continue
        if BEGIN in text:
            server = (_toml(config) or {}).get("mcp_servers", {}).get("ctxkeep", {})
            found_checks.append(
                resolves(f"codex server ({scope})", str(server.get("command", "")), CLIENT)
                if server
                else Check(f"codex server ({scope})", "fail", f"{config} is not valid TOML: Codex ignores it")
            )
            if isinstance(server, dict) and server:
                found_checks.append(data_check(f"codex server data ({scope})", server, env))
        found_checks += [resolves(f"codex {event} hook ({scope})", command, CLIENT) for event, command in found.items()]
        missing = [e for e in EVENTS if e not in found]
        if missing:
            found_checks.append(
                Check(
                    f"codex hooks ({scope})",
                    "warn",
                    f"not installed: {', '.join(missing)} (ctxkeep install codex"
                    + (" --scope project)" if scope == "project" else ")"),
                )
            )
        untrusted = _untrusted(hooks, data or {}, user_config) if found else []
        if untrusted:
            found_checks.append(
                Check(
                    f"codex hook trust ({scope})",
                    "warn",
                    f"Codex skips hooks it has not trusted, silently: {', '.join(untrusted)}. Start `codex` in "
                    f"{project}, open /hooks and trust the ctxkeep hooks (or run `codex exec "
                    "--dangerously-bypass-hook-trust` for one run)",
                )
            )
        if scope == "project" and _project_trust(user_config, project) != "trusted":
            found_checks.append(
                Check(
                    "codex project trust",
                    "warn",
                    f"Codex does not load {project / '.codex'} until the project "
                    f"is trusted: run `codex exec --trust` in {project} once, or add "
                    f'[projects."{project}"] trust_level = "trusted" to {paths("user", project, env)[0]}',
                )
            )
    return found_checks


def _project_trust(user_config: dict[str, Any] | None, project: Path) -> str | None:
    projects = (user_config or {}).get("projects", {})
    entry = projects.get(str(project)) if isinstance(projects, dict) else None
    return entry.get("trust_level") if isinstance(entry, dict) else None
