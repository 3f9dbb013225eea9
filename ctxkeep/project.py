"""Project resolution: which project a server, CLI call or hook works in.

One rule everywhere (DESIGN.md): the first of `CTXKEEP_PROJECT`, `CLAUDE_PROJECT_DIR`, the
hook input's `cwd`, the process cwd; then the realpath of its git top-level when inside a
repository, else the realpath itself. Never the basename: two checkouts named `app` are two
projects.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def resolve_project(env: Mapping[str, str], hook_cwd: str | None = None, cwd: str | None = None) -> str:
    """The project key: an absolute, symlink-free directory path."""
    chosen = env.get("CTXKEEP_PROJECT") or env.get("CLAUDE_PROJECT_DIR") or hook_cwd or cwd or os.getcwd()
    real = Path(os.path.realpath(os.path.expanduser(chosen)))
    top = git_toplevel(real)
    return str(top if top is not None else real)


def git_toplevel(path: Path) -> Path | None:
    """The nearest ancestor (or `path` itself) holding `.git` (a directory, or a file for worktrees)."""
    for candidate in (path, *path.parents):
        if (candidate / ".git").exists():
            return candidate
    return None
