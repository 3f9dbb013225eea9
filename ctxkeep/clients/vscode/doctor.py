"""The doctor's VS Code checks: ctxkeep's server and hooks at each scope, their commands resolving."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import get_args

from ctxkeep.clients.core.checks import Check
from ctxkeep.clients.core.install_files import installed_checks
from ctxkeep.clients.vscode.install import EVENTS, paths, Scope
from ctxkeep.clients.table import BY_NAME


def checks(project: Path, env: Mapping[str, str]) -> list[Check]:
    found: list[Check] = []
    for scope in get_args(Scope):
        mcp, hooks = paths(scope, project, env)
        fix = "ctxkeep install vscode" + (" --scope user" if scope == "user" else "")
        found += installed_checks("vscode", BY_NAME["vscode"].title, scope, (mcp, "servers"), hooks, EVENTS, fix, env)
    return found
