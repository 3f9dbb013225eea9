"""`ctxkeep install|uninstall <client>`, `ctxkeep install --list` and the doctor's checks of every client.

Each client folder has an `install` module (TITLE, SCOPES with the default first, LISTING, `plan`, `notes`) and a
`doctor` module (`checks`); Claude Code keeps its own runner (`claude mcp add` for its local and user scopes).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

from ctxkeep.clients.core.checks import Check
from ctxkeep.clients.core.config_files import apply, diff, find_executable
from ctxkeep.errors import InvalidInput

CLIENTS = {
    "claude-code": "claude_code",
    "codex": "codex",
    "gemini": "gemini",
    "cursor": "cursor",
    "vscode": "vscode",
    "windsurf": "windsurf",
    "cline": "cline",
}
SCOPE_CHOICES = ("local", "project", "user")


def module(client: str, part: str) -> ModuleType:
    return import_module(f"ctxkeep.clients.{CLIENTS[client]}.{part}")


def scopes(client: str) -> tuple[str, ...]:
    if client == "claude-code":
        return ("local", "project", "user")
    return tuple(module(client, "install").SCOPES)


def run(
    action: str,
    client: str,
    scope: str | None,
    project: Path,
    env: Mapping[str, str],
    dry_run: bool,
    keep_env: bool = False,
) -> list[str]:
    """Install or uninstall `client` at `scope` (its default when None), or with `dry_run` show what would change;
    `keep_env` (Claude Code): keep the settings a committed `.mcp.json` entry has that install did not write."""
    allowed = scopes(client)
    chosen = scope or allowed[0]
    if chosen not in allowed:
        raise InvalidInput(f"{client} has no {chosen!r} scope; use one of: {', '.join(allowed)}")
    if client == "claude-code":
        from ctxkeep.clients.claude_code import install as claude

        return claude.run(action, chosen, project, env, dry_run, keep_env)  # type: ignore[arg-type]
    installer = module(client, "install")
    changes = installer.plan(action, chosen, project, env, find_executable())
    if dry_run:
        return [diff(change) or f"unchanged {change.path}" for change in changes]
    lines = apply(changes, backup=action == "install")
    if hasattr(installer, "finish"):
        installer.finish(changes)  # e.g. make hook scripts executable
    return lines + list(installer.notes(action, chosen, project))


def listing() -> list[str]:
    """`ctxkeep install --list`: per client, its scopes and files, the events used, what is injected and its limit,
    and what does not work there."""
    lines: list[str] = []
    for client in CLIENTS:
        if client == "claude-code":
            info: dict[str, Any] = CLAUDE_CODE
        else:
            installer = module(client, "install")
            info = {"title": installer.TITLE, "scopes": installer.SCOPES, **installer.LISTING}
        lines += [f"{client} ({info['title']}): ctxkeep install {client} [--scope {'|'.join(info['scopes'])}]"]
        lines += [
            f"  {key}: {info[key]}"
            for key in ("files", "events", "injects", "offload", "gate", "missing")
            if info.get(key)
        ]
    return lines


CLAUDE_CODE = {
    "title": "Claude Code",
    "scopes": ("local", "project", "user"),
    "files": ".claude/settings.local.json + `claude mcp add --scope local` (local); .claude/settings.json + .mcp.json "
    "(project); <config>/settings.json + `claude mcp add --scope user` (user)",
    "events": "SessionStart, UserPromptSubmit, PostToolUse, PostToolUseFailure, PreCompact, PostCompact, Stop",
    "injects": "the records' view (9,000 characters) at resume; the repair of the compaction summary (4,000)",
    "offload": "large outputs replaced by their shaped view and ref",
    "gate": "Stop blocks once",
}


def doctor_checks(project: Path, env: Mapping[str, str] | None = None) -> list[Check]:
    """The checks of every client ctxkeep is installed in, besides Claude Code (reported on its own)."""
    env = env if env is not None else os.environ
    checks: list[Check] = []
    for client in CLIENTS:
        if client == "claude-code":
            continue
        try:
            checks += module(client, "doctor").checks(project, env)
        except Exception as exc:  # one client's odd files never hide the others' checks
            checks.append(Check(f"{client}", "warn", f"its files could not be checked: {type(exc).__name__}: {exc}"))
    return checks
