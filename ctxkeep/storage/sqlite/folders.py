"""Private folders for the database: each missing folder created 0700, under any umask. Standard library only (the
hooks' fast path opens the database too; `files.py` costs it dataclasses and inspect)."""

from __future__ import annotations

import os

PRIVATE_FOLDER = 0o700


def make_private_folders(folder: str | os.PathLike[str]) -> None:
    """Create the missing folders one by one, each 0700 (os.makedirs gives parents the umask's mode)."""
    missing = []
    candidate = os.path.abspath(folder)
    while not os.path.exists(candidate):
        missing.append(candidate)
        parent = os.path.dirname(candidate)
        if parent == candidate:
            break
        candidate = parent
    for candidate in reversed(missing):
        os.mkdir(candidate, PRIVATE_FOLDER)
        os.chmod(candidate, PRIVATE_FOLDER)  # the umask can take bits away from mkdir's mode, never add them
