"""The database file on disk: created private, whether it can be written, which file it is, and what an SQLite error
means for it.

New folders are made 0700 (each one, under any umask) and the file 0600 (`folders.py`); an existing file of ours that
others may read is tightened to 0600 with its -wal and -shm when it is opened (`opener.tighten`). A file that cannot be
written (its permissions, an immutable attribute, a read-only mount) or a folder that cannot hold the -wal and -shm
files is opened read-only: reads work, writes get one error naming what is read-only.
"""

from __future__ import annotations

import errno
import logging
import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path

from ctxkeep.errors import DatabaseUnavailable
from ctxkeep.storage.sqlite.folders import create_private_file

logger = logging.getLogger("ctxkeep")


@dataclass(frozen=True)
class Access:
    """Whether the file can be written; when not, what is read-only, why, and what would fix it."""

    writable: bool
    what: str = ""
    reason: str = ""
    fix: str = ""


def _folder_is_read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def prepare(path: Path) -> Access:
    """Create the folders and the file (private) when absent; say whether it can be written. Raises OSError when the
    file neither exists nor can be created. (An existing file is tightened only once it is known to be ctxkeep's.)"""
    folder = path.parent
    try:
        create_private_file(path)
    except OSError as exc:
        if not path.exists() or exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
            raise
        if exc.errno == errno.EROFS:
            return Access(
                False,
                f"the folder {folder}",
                "it is on a read-only file system",
                "remount it read-write, or point CTXKEEP_DB at a writable place",
            )
        return Access(
            False,
            str(path),
            "its permissions or attributes forbid writing",
            "make it writable (chmod u+w, or chattr -i), or point CTXKEEP_DB at another file",
        )
    if _folder_is_read_only(folder):
        return Access(
            False,
            f"the folder {folder}",
            "it is on a read-only file system",
            "remount it read-write, or point CTXKEEP_DB at a writable place",
        )
    if not os.access(folder, os.W_OK | os.X_OK):
        return Access(
            False,
            f"the folder {folder}",
            f"it cannot hold {path.name}-wal and {path.name}-shm, which SQLite keeps beside the database while writing",
            "make the folder writable, or move the database elsewhere with CTXKEEP_DB",
        )
    return Access(True)


def read_only(path: Path, access: Access) -> DatabaseUnavailable:
    return DatabaseUnavailable(
        f"database {path}: {access.what} is read-only ({access.reason}), so nothing was written; "
        f"reads still work. To write, {access.fix}"
    )


def identity(path: Path) -> tuple[int, int] | None:
    """The (device, inode) the path names now; None when nothing is there."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return info.st_dev, info.st_ino


def moved(path: Path, opened: tuple[int, int]) -> DatabaseUnavailable | None:
    """Why a write must not commit: the file was deleted or replaced since it was opened (None when it is the same)."""
    now = identity(path)
    if now == opened:
        return None
    change = "deleted" if now is None else "replaced by another file"
    return DatabaseUnavailable(
        f"database {path} was {change} while ctxkeep had it open, so nothing was written (a write would land in the "
        "old file, where no later process finds it); restart ctxkeep (your MCP client restarts the server) to use the "
        "file now at that path, or restore the original from a backup"
    )


FREE_SPACE = (
    "the disk is full, or the database reached its size limit, so nothing was written; reads still work. "
    "To make room: free disk space outside ctxkeep, or delete inside it — `ctxkeep gc` (expired evidence), "
    "evidence_delete (one record), memory_forget (a memory) — whose freed pages the next writes reuse (they "
    "need only a little free space for the WAL; the file itself does not shrink)"
)


def unavailable(path: Path, exc: sqlite3.Error) -> DatabaseUnavailable:
    """An SQLite error as one message naming the file and what to do."""
    text = str(exc)
    if "locked" in text or "busy" in text:
        hint = "another process holds a write lock longer than busy_timeout; retry shortly"
        logger.warning(
            "ctxkeep: a write to %s gave up waiting for another process's write transaction on the file "
            "(CTXKEEP_BUSY_TIMEOUT_MS): %s",
            path,
            text,
        )
    elif "full" in text:
        hint = FREE_SPACE
    elif "readonly" in text or "read-only" in text:
        hint = (
            f"the file or its folder ({path.parent}) became read-only after it was opened, so nothing was written; "
            "reads still work; make both writable and retry"
        )
    elif "not a database" in text or "malformed" in text:
        hint = "the file is not a valid ctxkeep database; restore it from backup or point CTXKEEP_DB elsewhere"
    else:
        hint = "check the file and its permissions"
    return DatabaseUnavailable(f"database {path}: {text}; {hint}")
