"""The doctor's Cline checks: ctxkeep's server and hook scripts, their commands resolving, the scripts executable."""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import get_args

from ctxkeep.clients.cline.install import EVENTS, _ours, hooks_folder, mcp_settings, Scope
from ctxkeep.clients.table import BY_NAME
from ctxkeep.clients.core.checks import Check
from ctxkeep.clients.core.install_files import installed_checks, resolves


def checks(project: Path, env: Mapping[str, str]) -> list[Check]:
    found = installed_checks(
        "cline",
        BY_NAME["cline"].title,
        "user",
        (mcp_settings(env), "mcpServers"),
        None,
        EVENTS,
        "ctxkeep install cline",
        env,
    )
    for scope in get_args(Scope):
        folder = hooks_folder(scope, project, env)
        scripts = {event: _ours(folder / event, event) for event in EVENTS}
        if not any(scripts.values()):
            continue
        for event, text in scripts.items():
            if text is None:
                found.append(
                    Check(
                        f"cline {event} hook ({scope})",
                        "warn",
                        f"not installed (ctxkeep install cline --scope {scope})",
                    )
                )
                continue
            command = " ".join(shlex.split(text.splitlines()[2])[1:])
            found.append(
                resolves(f"cline {event} hook ({scope})", command, "cline")
                if os.access(folder / event, os.X_OK)
                else Check(f"cline {event} hook ({scope})", "fail", f"{folder / event} is not executable: chmod +x it")
            )
    return found
