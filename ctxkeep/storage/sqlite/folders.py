"""A private place for the database: each missing folder created 0700 under any umask, the file 0600. Standard
library only (the hooks' fast path creates the database too; `files.py` costs it dataclasses and inspect)."""

from __future__ import annotations

import os

PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600


def create_private_file(path: str | os.PathLike[str]) -> None:
    """Make the missing folders (0700 each) and the file (0600) when absent; an existing file is left as it is.
    OSError when that is not possible."""
    make_private_folders(os.path.dirname(os.path.abspath(path)))
    os.close(os.open(path, os.O_CREAT | os.O_RDWR, PRIVATE_FILE))


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
