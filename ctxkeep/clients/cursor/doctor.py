"""The doctor's Cursor checks: ctxkeep's server and hooks at each scope, their commands resolving."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import get_args

from ctxkeep.clients.core.checks import Check
from ctxkeep.clients.core.install_files import installed_checks
from ctxkeep.clients.cursor.install import EVENTS, folder, Scope
from ctxkeep.clients.table import BY_NAME


def checks(project: Path, env: Mapping[str, str]) -> list[Check]:
    found: list[Check] = []
    for scope in get_args(Scope):
        base = folder(scope, project, env)
        fix = "ctxkeep install cursor" + (" --scope user" if scope == "user" else "")
        found += installed_checks(
            "cursor",
            BY_NAME["cursor"].title,
            scope,
            (base / "mcp.json", "mcpServers"),
            base / "hooks.json",
            EVENTS,
            fix,
            env,
        )
    return found
