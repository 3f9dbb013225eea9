"""The doctor's Gemini CLI checks: where ctxkeep is installed, whether its commands resolve, and whether Gemini trusts
the project folder (it ignores project settings in an untrusted folder, and a headless run there exits with code 55),
with the exact step that trusts it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, get_args

from ctxkeep.clients.core.server_entry import data_check
from ctxkeep.clients.core.checks import Check, json_file
from ctxkeep.clients.core.install_files import found_hooks, resolves
from ctxkeep.clients.gemini.hooks import CLIENT, gemini_home
from ctxkeep.clients.gemini.install import EVENTS, settings_path, Scope

TRUSTED = ("TRUST_FOLDER", "TRUST_PARENT")


def trusted_folders(env: Mapping[str, str]) -> Path:
    """GEMINI_CLI_TRUSTED_FOLDERS_PATH, else ~/.gemini/trustedFolders.json."""
    if env.get("GEMINI_CLI_TRUSTED_FOLDERS_PATH"):
        return Path(env["GEMINI_CLI_TRUSTED_FOLDERS_PATH"]).expanduser()
    return Path(gemini_home(env)) / "trustedFolders.json"


def folder_trust(project: Path, env: Mapping[str, str], user: dict[str, Any] | None) -> str | None:
    """Why Gemini trusts `project` ("trust is off", "trusted by <rule>"), or None when it does not. The most specific
    rule wins: TRUST_FOLDER covers a folder and everything in it, TRUST_PARENT the folder's parent, DO_NOT_TRUST the
    folder itself."""
    folder_trust_setting = ((user or {}).get("security") or {}).get("folderTrust") or {}
    if isinstance(folder_trust_setting, dict) and folder_trust_setting.get("enabled") is False:
        return "folder trust is off in ~/.gemini/settings.json"
    if env.get("GEMINI_CLI_TRUST_WORKSPACE", "").lower() == "true":
        return "GEMINI_CLI_TRUST_WORKSPACE=true"
    rules = json_file(trusted_folders(env)) or {}
    real = Path(os.path.realpath(project))
    best: tuple[int, str, str] | None = None
    for path, level in rules.items():
        base = Path(os.path.realpath(path))
        covered = base.parent if level == "TRUST_PARENT" else base
        applies = (level == "DO_NOT_TRUST" and real == base) or (
            level in TRUSTED and (real == covered or covered in real.parents)
        )
        if applies and (best is None or len(str(covered)) > best[0]):
            best = (len(str(covered)), str(level), path)
    return f"trusted by {best[2]}: {best[1]}" if best and best[1] in TRUSTED else None


def checks(project: Path, env: Mapping[str, str]) -> list[Check]:
    """One check a line for every scope where ctxkeep is installed in Gemini CLI (none when it is not installed)."""
    found_checks: list[Check] = []
    user = json_file(settings_path("user", project, env))
    for scope in get_args(Scope):
        path = settings_path(scope, project, env)
        data = json_file(path) if path.exists() else None
        if path.exists() and data is None:
            found_checks.append(
                Check(f"gemini settings ({scope})", "fail", f"{path} is not a JSON object: Gemini ignores it")
            )
            continue
        servers = (data or {}).get("mcpServers")
        server = servers.get("ctxkeep") if isinstance(servers, dict) else None
        hooks = found_hooks(data, CLIENT, EVENTS)
        if not server and not hooks:
            continue
        if isinstance(server, dict):
            found_checks.append(resolves(f"gemini server ({scope})", str(server.get("command", "")), CLIENT))
            found_checks.append(data_check(f"gemini server data ({scope})", server, env))
        found_checks += [
            resolves(f"gemini {event} hook ({scope})", command, CLIENT) for event, command in hooks.items()
        ]
        missing = [e for e in EVENTS if e not in hooks]
        if missing:
            found_checks.append(
                Check(
                    f"gemini hooks ({scope})",
                    "warn",
                    f"not installed: {', '.join(missing)} "
                    f"(ctxkeep install gemini{' --scope project' if scope == 'project' else ''})",
                )
            )
    if found_checks:
        why = folder_trust(project, env, user)
        found_checks.append(
            Check("gemini folder trust", "ok", why)
            if why
            else Check(
                "gemini folder trust",
                "warn",
                f"Gemini CLI does not trust {project} yet: it ignores ctxkeep's project settings "
                f"there and a headless run exits with code 55. Start `gemini` in {project} and choose to trust the folder, or "
                f'add "{project}": "TRUST_FOLDER" to {trusted_folders(env)}',
            )
        )
    return found_checks
