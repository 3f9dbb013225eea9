"""`ctxkeep install|uninstall <client>`, `ctxkeep install --list` and the doctor's checks of every client, over the
table of clients (`ctxkeep.clients.table`: each client's install, doctor and hooks modules and its scopes)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import import_module
from pathlib import Path
from types import ModuleType
from typing import Any

from ctxkeep.clients.core.checks import Check
from ctxkeep.clients.core.config_files import apply, diff, find_executable
from ctxkeep.clients.table import BY_NAME, CLIENTS
from ctxkeep.errors import InvalidInput


def module(client: str, part: str) -> ModuleType:
    return import_module(BY_NAME[client].module(part))


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
    allowed = BY_NAME[client].scopes
    chosen = scope or allowed[0]
    if chosen not in allowed:
        raise InvalidInput(f"{client} has no {chosen!r} scope; use one of: {', '.join(allowed)}")
    installer = module(client, "install")
    if hasattr(installer, "run"):  # a client that registers its server with its own command (Claude Code)
        return list(installer.run(action, chosen, project, env, dry_run, keep_env))
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
        info: dict[str, Any] = module(client.name, "install").LISTING
        lines += [f"{client.name} ({client.title}): ctxkeep install {client.name} [--scope {'|'.join(client.scopes)}]"]
        lines += [
            f"  {key}: {info[key]}"
            for key in ("files", "events", "injects", "offload", "gate", "missing")
            if info.get(key)
        ]
    return lines


def doctor_checks(project: Path, env: Mapping[str, str] | None = None) -> list[Check]:
    """The checks of every client (each says whether ctxkeep is installed there), Claude Code's first."""
    env = env if env is not None else os.environ
    checks: list[Check] = []
    for client in CLIENTS:
        try:
            checks += module(client.name, "doctor").checks(project, env)
        except Exception as exc:  # one client's odd files never hide the others' checks
            checks.append(Check(client.name, "warn", f"its files could not be checked: {type(exc).__name__}: {exc}"))
    return checks
