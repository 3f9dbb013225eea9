"""The bearer token `serve --http` requires by default: generated once, kept 0600 beside the database.

Loopback is not private: every local user can connect to 127.0.0.1. Without a token, another user of the machine
could read and write everything the server holds, whatever the database file's mode. So `serve --http` without
CTXKEEP_HTTP_TOKEN uses the token in `<database folder>/http-token`, creating it (random, 43 characters, mode 0600)
when it is missing; only the owner can read it and hand it to a client. A token file that is not a regular file of
this user, or that others can read or write, is refused: its token may be known.
"""

from __future__ import annotations

import os
import secrets
import stat
import sys
from pathlib import Path

from ctxkeep.errors import InvalidInput

TOKEN_FILE = "http-token"
MIN_TOKEN_CHARS = 24


def token_path(db_path: Path) -> Path:
    return db_path.parent / TOKEN_FILE


def load_or_create_token(path: Path) -> str:
    """The token in `path`; a new one when the file is missing (written whole, 0600, never over an existing file).

    Raises InvalidInput when the file is unsafe (a symlink, not a regular file, another user's, readable or writable by
    others) or holds no usable token.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not os.path.lexists(path):
        _create(path)
    return _read(path)


def _create(path: Path) -> None:
    """Write a new token to a private temporary file, then link it into place: no one ever reads half a token, and of
    two servers starting at once the second uses the first one's token."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)  # whatever the umask
        os.write(fd, (secrets.token_urlsafe(32) + "\n").encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(temporary, path)
    except FileExistsError:
        pass
    except OSError:  # a file system without hard links: move it into place (only a simultaneous start could race)
        if not os.path.lexists(path):
            os.replace(temporary, path)
    finally:
        if os.path.lexists(temporary):
            temporary.unlink()


def _read(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise InvalidInput(
            f"cannot read the HTTP token file {path} ({exc.strerror}); it must be a regular file you own, "
            "mode 0600 (delete it to have a new token made)"
        ) from exc
    try:
        info = os.fstat(fd)
        if sys.platform != "win32":
            _check_private(path, info)
        token = os.read(fd, 4096).decode("utf-8", errors="replace").strip()
    finally:
        os.close(fd)
    if len(token) < MIN_TOKEN_CHARS:
        raise InvalidInput(
            f"the HTTP token file {path} holds no token of {MIN_TOKEN_CHARS}+ characters; delete it to have a new one "
            "made, or write a long random one into it"
        )
    return token


def _check_private(path: Path, info: os.stat_result) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise InvalidInput(f"the HTTP token file {path} is not a regular file; remove it to have a new token made")
    if info.st_uid != os.getuid():
        raise InvalidInput(
            f"the HTTP token file {path} belongs to user id {info.st_uid}, not to you ({os.getuid()}); "
            "remove it to have a new token made"
        )
    mode = stat.S_IMODE(info.st_mode)
    if mode & 0o077:
        raise InvalidInput(
            f"the HTTP token file {path} has mode {mode:04o}: other users could read or change it, so its token "
            f"may be known. Delete it to have a new token made (then update your client's header), or "
            f"`chmod 600 {path}` if no one else could have read it"
        )
