"""`ctxkeep serve --http`: the same server over Streamable HTTP, on loopback, behind a bearer token.

Every request must carry `Authorization: Bearer <token>` (the scheme in any case). The token is CTXKEEP_HTTP_TOKEN
when set, else the generated one in `http-token` beside the database (`http_token`): on loopback another local user
can connect too, and must not read or write what the server holds. `--no-token` turns the check off, on loopback
only and said aloud. A non-loopback host needs `--allow-remote` and CTXKEEP_HTTP_TOKEN. What each request goes
through, the body limit and the token check: `http_app`.

Once the database holds user tokens (`ctxkeep token create`), only those are accepted (`http_users`), also by a
server started before the first one was made: the mode is read while serving, not decided at start. Before any token
check, `http_limits` times out unfinished requests and caps the connections.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from ctxkeep.db_location import shown_location
from ctxkeep.errors import InvalidInput
from ctxkeep.server.http_app import BearerToken, http_app, is_loopback
from ctxkeep.server.http_token import MIN_TOKEN_CHARS, load_or_create_token, token_path
from ctxkeep.settings import Settings


def check_exposure(host: str, token: str | None, allow_remote: bool, no_token: bool = False) -> None:
    """Raise InvalidInput unless the host is loopback, or remote access is explicit and protected by CTXKEEP_HTTP_TOKEN."""
    if token is not None and no_token:
        raise InvalidInput(
            "--no-token and CTXKEEP_HTTP_TOKEN contradict each other: unset CTXKEEP_HTTP_TOKEN, or drop --no-token"
        )
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise InvalidInput(
            f"CTXKEEP_HTTP_TOKEN is shorter than {MIN_TOKEN_CHARS} characters; use a long random one "
            "(python -c 'import secrets; print(secrets.token_urlsafe(32))')"
        )
    if is_loopback(host):
        return
    if not allow_remote:
        raise InvalidInput(
            f"--host {host} is not 127.0.0.1, localhost or ::1; add --allow-remote (and set CTXKEEP_HTTP_TOKEN) to "
            "serve it, or leave --host at 127.0.0.1"
        )
    if token is None:
        raise InvalidInput(f"serving {host} needs a bearer token: set CTXKEEP_HTTP_TOKEN to a long random value")


def _announce(url: str, where: str | None, token_file: Path | None, serves: str = "") -> None:
    """Tell the owner, on stderr, how a client connects (never the token itself: stderr may end up in a shared log);
    `serves`: which database and project, for the first line."""
    if where is None:
        print(
            f"ctxkeep: warning: --no-token: any local user can read and write everything this server holds at {url}{serves}",
            file=sys.stderr,
            flush=True,
        )
        return
    header = f"$(cat {shlex.quote(str(token_file))})" if token_file else "$CTXKEEP_HTTP_TOKEN"
    print(
        f"ctxkeep: serving {url}{serves}; every request needs Authorization: Bearer <the token in {where}>",
        file=sys.stderr,
    )
    print(
        f'ctxkeep: Claude Code: claude mcp add --transport http ctxkeep {url} --header "Authorization: Bearer {header}"',
        file=sys.stderr,
        flush=True,
    )


def serve_http(
    settings: Settings, host: str, port: int, token: str | None, allow_remote: bool, no_token: bool = False
) -> None:
    """Serve until interrupted. `token` is CTXKEEP_HTTP_TOKEN (None: unset); without it and without `no_token`, the
    generated token file beside the database is used (created when missing)."""
    import anyio
    import uvicorn

    from ctxkeep.server.http_limits import connection_limits
    from ctxkeep.server.http_users import UserTokens, has_users, serve_with_users

    if anyio.run(has_users, settings.location, settings.busy_timeout_ms):  # per-user tokens: only those are accepted
        serve_with_users(settings, host, port, token, allow_remote, no_token)
        return
    check_exposure(host, token, allow_remote, no_token)
    token_file, where = None, None if no_token else "CTXKEEP_HTTP_TOKEN"
    if token is None and not no_token:
        token_file = token_path(settings.db_path)
        token, where = load_or_create_token(token_file), str(token_file)
    bare = host.strip("[]")
    database = shown_location(settings.location)  # never a URL's password
    _announce(
        f"http://{f'[{bare}]' if ':' in bare else bare}:{port}/mcp",
        where,
        token_file,
        f" (database {database}, project {settings.project})",
    )
    inner = http_app(settings, host, None)
    shared = BearerToken(inner, token, where or "") if token else inner
    app = UserTokens(  # the token mode, per request
        inner, settings.location, settings.busy_timeout_ms, shared=shared, timeout_ms=settings.db_timeout_ms
    )
    uvicorn.run(app, host=bare, port=port, log_level=settings.log_level.lower(), **connection_limits())
