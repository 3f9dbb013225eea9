"""A shared server's users: per-user bearer tokens, stored hashed, each scoped to the projects it may see.

A token reads `ckt_<id>_<secret>`: the id (8 hex digits) finds the row, the secret (32 random bytes, URL-safe) is
what proves it; only the secret's sha256 is stored (a high-entropy random secret needs no slow hash), compared in
constant time. `ctxkeep token create` prints a token once; `list` shows ids, users, projects and dates, never a
secret; `revoke` ends a token at once (the next request with it is refused). Wrong, revoked and unknown tokens get
the same answer, so a refusal says nothing about what exists.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass

from ctxkeep.errors import InvalidInput, NotFound
from ctxkeep.project import resolve_project
from ctxkeep.storage import Store, TokenRow
from ctxkeep.text import utc_text
from ctxkeep.tools.scope import utc_now

_TOKEN = re.compile(r"^ckt_([0-9a-f]{8})_([A-Za-z0-9_-]{43})$")
_USER = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@+-]{0,99}$")
MAX_PROJECTS = 100


@dataclass(frozen=True)
class User:
    """Who a request comes from and the projects its token may see."""

    token_id: str
    name: str
    projects: tuple[str, ...]


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("ascii")).hexdigest()


def _user(row: TokenRow) -> User:
    return User(row.token_id, row.user, tuple(json.loads(row.projects_json)))


def project_key(project: str) -> str:
    """A project as every command names it (`ctxkeep.project.resolve_project`): absolute, no trailing slash, symlinks
    resolved, the git top-level when inside a repository (a relative path is taken from the current folder)."""
    return resolve_project({"CTXKEEP_PROJECT": project.strip()})


async def create_token(store: Store, user: str, projects: list[str]) -> tuple[str, User]:
    """A new token for `user`, granting `projects` (at least one, each normalized by `project_key`, so saves land in
    the project local commands name); the token text is returned once, never stored."""
    if not _USER.match(user):
        raise InvalidInput(
            f"user {user[:40]!r}: use letters, digits and . _ @ + - (at most 100), e.g. alice or ci@acme"
        )
    wanted = sorted(set(project_key(project) for project in projects if project.strip()))
    if not wanted or len(wanted) > MAX_PROJECTS:
        raise InvalidInput(f"name between 1 and {MAX_PROJECTS} projects the token may see (--project KEY, repeatable)")
    token_id, secret = secrets.token_hex(4), secrets.token_urlsafe(32)
    row = TokenRow(
        token_id, user, _digest(secret), json.dumps(wanted, ensure_ascii=False), utc_text(utc_now()) or "", None
    )
    async with store.transaction() as tx:
        await tx.tokens.insert(row)
    return f"ckt_{token_id}_{secret}", _user(row)


async def list_tokens(store: Store) -> list[TokenRow]:
    async with store.snapshot() as tx:
        return await tx.tokens.all()


async def revoke_token(store: Store, token_id: str) -> None:
    """Revoke a token by its id (the 8 hex digits after ckt_, as `token list` shows them); raises NotFound."""
    async with store.transaction() as tx:
        if not await tx.tokens.revoke(token_id, utc_text(utc_now()) or ""):
            raise NotFound(f"no live token {token_id!r}: `ctxkeep token list` shows the ids (revoked ones say so)")


async def users_exist(store: Store) -> bool:
    """Whether this database has per-user tokens (then a shared server accepts only those); one short read."""
    async with store.snapshot() as tx:
        return await tx.tokens.any()


async def authenticate(store: Store, token: str) -> User | None:
    """The user a bearer token belongs to; None for a malformed, unknown, wrong or revoked token (all alike)."""
    found = _TOKEN.match(token)
    if found is None:
        return None
    async with store.snapshot() as tx:
        row = await tx.tokens.get(found.group(1))
    expected = row.secret_sha256 if row is not None else _digest("x" * 43)  # compare anyway: the same time either way
    if not hmac.compare_digest(expected, _digest(found.group(2))) or row is None or row.revoked_at is not None:
        return None
    return _user(row)
