"""The doctor's Windsurf checks: ctxkeep's server, hooks and rules file, their commands resolving."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import get_args

from ctxkeep.clients.core.checks import Check
from ctxkeep.clients.core.install_files import installed_checks
from ctxkeep.clients.windsurf.install import EVENTS, RULES, paths, Scope
from ctxkeep.clients.table import BY_NAME


def checks(project: Path, env: Mapping[str, str]) -> list[Check]:
    found: list[Check] = []
    for scope in get_args(Scope):
        mcp, hooks, rules = paths(scope, project, env)
        fix = "ctxkeep install windsurf" + (" --scope project" if scope == "project" else "")
        lines = installed_checks(
            "windsurf",
            BY_NAME["windsurf"].title,
            scope,
            (mcp, "mcpServers") if scope == "user" else None,
            hooks,
            EVENTS,
            fix,
            env,
        )
        if rules is not None and lines:
            present = rules.exists() and rules.read_text(encoding="utf-8", errors="replace") == RULES
            lines.append(
                Check(
                    "windsurf rules (project)",
                    "ok" if present else "warn",
                    str(rules) if present else f"{rules} is missing or changed ({fix})",
                )
            )
        found += lines
    return found
