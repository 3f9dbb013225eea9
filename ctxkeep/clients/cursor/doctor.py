"""The doctor's Cursor checks: ctxkeep's server and hooks at each scope, their commands resolving."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ctxkeep.clients.core.checks import Check
from ctxkeep.clients.core.install_files import installed_checks
from ctxkeep.clients.cursor.install import EVENTS, SCOPES, TITLE, folder


def checks(project: Path, env: Mapping[str, str]) -> list[Check]:
    found: list[Check] = []
    for scope in SCOPES:
        base = folder(scope, project, env)
        fix = "ctxkeep install cursor" + (" --scope user" if scope == "user" else "")
        found += installed_checks(
            "cursor", TITLE, scope, (base / "mcp.json", "mcpServers"), base / "hooks.json", EVENTS, fix, env
        )
    return found
