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

from ctxkeep.db_location import is_database_url

TYPE_CHECKING = False  # pathlib costs a hook process ~4 ms (it imports urllib.parse and ipaddress): paths are str here
if TYPE_CHECKING:
    from pathlib import Path


def resolve_project(env: Mapping[str, str], hook_cwd: str | None = None, cwd: str | None = None) -> str:
    """The project key: an absolute, symlink-free directory path."""
    chosen = env.get("CTXKEEP_PROJECT") or env.get("CLAUDE_PROJECT_DIR") or hook_cwd or cwd or os.getcwd()
    real = os.path.realpath(os.path.expanduser(chosen))
    return git_toplevel(real) or real


def git_toplevel(path: str) -> str | None:
    """The nearest ancestor (or `path` itself, absolute) holding `.git` (a directory, or a file for worktrees)."""
    candidate = path
    while True:
        if os.path.exists(os.path.join(candidate, ".git")):
            return candidate
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return None
        candidate = parent


def is_under(path: str, root: str) -> bool:
    """Whether `path` is `root` or inside it (both absolute and normalized, as realpath gives them)."""
    return path == root or path.startswith(root if root.endswith(os.sep) else root + os.sep)


def _home(env: Mapping[str, str]) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def default_db_file(env: Mapping[str, str]) -> str:
    """The per-user data directory's database: XDG on Linux, Application Support on macOS, LOCALAPPDATA on Windows."""
    home = _home(env)
    if sys.platform == "darwin":
        base = os.path.join(home, "Library", "Application Support")
    elif sys.platform == "win32":
        base = env.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
    else:
        base = env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    return os.path.join(base, "ctxkeep", "ctxkeep.db")


def default_db_path(env: Mapping[str, str]) -> Path:
    """`default_db_file` as a Path."""
    from pathlib import Path

    return Path(default_db_file(env))


def spool_name(url: str) -> str:
    """The name of the SQLite file the per-event hooks write when CTXKEEP_DB is a PostgreSQL URL (they run on the
    standard library, which cannot talk to PostgreSQL): one per server, user, database and schema. The password is left
    out of the name, so changing it keeps the spool."""
    import zlib

    scheme, _, rest = url.partition("://")
    credentials, at, place = rest.rpartition("@")
    who = credentials.split(":", 1)[0] + at if at else ""
    return f"spool-{zlib.crc32(f'{scheme}://{who}{place}'.encode()):08x}.db"


def spool_path(url: str, folder: Path) -> Path:
    """The spool file (`spool_name`) of `url` in `folder`."""
    return folder / spool_name(url)


def hook_db_path(env: Mapping[str, str]) -> str:
    """The SQLite file the hooks open: CTXKEEP_DB's file, the default one, or the spool beside the default one when
    CTXKEEP_DB is a PostgreSQL URL. Raises LocationError when CTXKEEP_DB names no database location."""
    chosen = env.get("CTXKEEP_DB")
    if not chosen:
        return default_db_file(env)
    if is_database_url(chosen):
        return os.path.join(os.path.dirname(default_db_file(env)), spool_name(chosen))
    path = os.path.expanduser(chosen)
    if not _has_scheme(chosen) and os.path.isdir(os.path.dirname(path) or "."):
        return path  # a file in a folder that exists: what database_location says too, without its pathlib
    from ctxkeep.db_location import database_location  # LocationError: a wrong CTXKEEP_DB

    return str(database_location(chosen, default_db_path(env)))


def _has_scheme(value: str) -> bool:
    """Whether `value` starts like a URL (`name:`), as `db_location` reads a scheme."""
    head, colon, _ = value.partition(":")
    plain = all(c.isascii() and (c.isalnum() or c in "+.-") for c in head)
    return bool(colon) and head[:1].isascii() and head[:1].isalpha() and plain


def claude_config_dir(env: Mapping[str, str]) -> str:
    """Claude Code's configuration folder: CLAUDE_CONFIG_DIR, else ~/.claude."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return os.path.expanduser(env["CLAUDE_CONFIG_DIR"])
    return os.path.join(_home(env), ".claude")


def transcript_slug(folder: str) -> str:
    """The folder name Claude Code keeps a project's sessions under: every character but letters and digits is '-'."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in folder)


def transcript_roots(env: Mapping[str, str], project: str, cwd: str | None = None) -> list[str]:
    """Where this project's transcripts may be read: its own session folders in Claude Code's `projects/` (for the
    project and, inside it, the hook's cwd; never another project's), the project itself, and CTXKEEP_ALLOWED_ROOTS
    (os.pathsep-separated). Real paths (symlinks resolved); a root that resolves to / allows nothing."""
    sessions = os.path.join(claude_config_dir(env), "projects")
    inside = cwd is not None and is_under(os.path.realpath(cwd), os.path.realpath(project))
    folders = [project] + ([cwd] if cwd and inside else [])
    roots = [os.path.join(sessions, transcript_slug(os.path.realpath(folder))) for folder in folders] + [project]
    roots += [part for part in env.get("CTXKEEP_ALLOWED_ROOTS", "").split(os.pathsep) if part.strip()]
    real = [os.path.realpath(root) for root in roots]
    return [root for root in dict.fromkeys(real) if os.path.splitdrive(root)[1].strip("/\\")]
