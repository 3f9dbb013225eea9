"""Where ctxkeep works: the project a server, CLI call or hook works in, and the default database file.

One rule everywhere (DESIGN.md): the first of `CTXKEEP_PROJECT`, `CLAUDE_PROJECT_DIR`, the
hook input's `cwd`, the process cwd; then the realpath of its git top-level when inside a
repository, else the realpath itself. Never the basename: two checkouts named `app` are two
projects.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from ctxkeep.db_location import database_location


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


def default_db_path(env: Mapping[str, str]) -> Path:
    """The per-user data directory: XDG on Linux, Application Support on macOS, LOCALAPPDATA on Windows."""
    home = Path(env.get("HOME") or Path.home())
    if sys.platform == "darwin":
        base = home / "Library" / "Application Support"
    elif sys.platform == "win32":
        base = Path(env.get("LOCALAPPDATA") or home / "AppData" / "Local")
    else:
        base = Path(env.get("XDG_DATA_HOME") or home / ".local" / "share")
    return base / "ctxkeep" / "ctxkeep.db"


def spool_path(url: str, folder: Path) -> Path:
    """The SQLite file the per-event hooks write when CTXKEEP_DB is a PostgreSQL URL (they run on the standard library,
    which cannot talk to PostgreSQL): one per server, user, database and schema, in `folder`. The password is left out
    of the name, so changing it keeps the spool."""
    import zlib

    scheme, _, rest = url.partition("://")
    credentials, at, place = rest.rpartition("@")
    who = credentials.split(":", 1)[0] + at if at else ""
    return folder / f"spool-{zlib.crc32(f'{scheme}://{who}{place}'.encode()):08x}.db"


def hook_db_path(env: Mapping[str, str]) -> Path:
    """The SQLite file the hooks open: CTXKEEP_DB's file, the default one, or the spool beside the default one when
    CTXKEEP_DB is a PostgreSQL URL. Raises LocationError when CTXKEEP_DB names no database location."""
    location = database_location(env.get("CTXKEEP_DB"), default_db_path(env))  # LocationError: a wrong CTXKEEP_DB
    return spool_path(location, default_db_path(env).parent) if isinstance(location, str) else location


def claude_config_dir(env: Mapping[str, str]) -> Path:
    """Claude Code's configuration folder: CLAUDE_CONFIG_DIR, else ~/.claude."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(env["CLAUDE_CONFIG_DIR"]).expanduser()
    return Path(env.get("HOME") or Path.home()) / ".claude"


def transcript_slug(folder: str) -> str:
    """The folder name Claude Code keeps a project's sessions under: every character but letters and digits is '-'."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in folder)


def transcript_roots(env: Mapping[str, str], project: str, cwd: str | None = None) -> list[Path]:
    """Where this project's transcripts may be read: its own session folders in Claude Code's `projects/` (for the
    project and, inside it, the hook's cwd; never another project's), the project itself, and CTXKEEP_ALLOWED_ROOTS
    (os.pathsep-separated). Symlinks resolved; a root that resolves to / allows nothing."""
    sessions = claude_config_dir(env) / "projects"
    folders = [project] + ([cwd] if cwd and (Path(cwd) == Path(project) or Path(project) in Path(cwd).parents) else [])
    roots = [sessions / transcript_slug(os.path.realpath(folder)) for folder in folders] + [Path(project)]
    roots += [Path(part) for part in env.get("CTXKEEP_ALLOWED_ROOTS", "").split(os.pathsep) if part.strip()]
    real = [Path(os.path.realpath(root)) for root in roots]
    return [root for root in dict.fromkeys(real) if root != Path(root.anchor)]
