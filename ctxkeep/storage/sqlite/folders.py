"""A private place for the database: each missing folder created 0700 under any umask, the file 0600. Standard
library only (the hooks' fast path creates the database too; `files.py` costs it dataclasses and inspect)."""

from __future__ import annotations

import os
from pathlib import Path

PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600


def create_private_file(path: Path) -> None:
    """Make the missing folders (0700 each) and the file (0600) when absent; an existing file is left as it is.
    OSError when that is not possible."""
    make_private_folders(path.parent)
    os.close(os.open(path, os.O_CREAT | os.O_RDWR, PRIVATE_FILE))


def make_private_folders(folder: Path) -> None:
    """Create the missing folders one by one, each 0700 (Path.mkdir(parents=True) gives parents the umask's mode)."""
    missing = []
    for candidate in [folder, *folder.parents]:
        if candidate.exists():
            break
        missing.append(candidate)
    for candidate in reversed(missing):
        candidate.mkdir(mode=PRIVATE_FOLDER)
        os.chmod(candidate, PRIVATE_FOLDER)  # the umask can take bits away from mkdir's mode, never add them
