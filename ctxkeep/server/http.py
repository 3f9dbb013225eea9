"""`ctxkeep serve --http`: the same server over Streamable HTTP, on loopback, behind a bearer token.

Every request must carry `Authorization: Bearer <token>` (the scheme in any case). The token is CTXKEEP_HTTP_TOKEN
when set, else the generated one in `http-token` beside the database (`http_token`): on loopback another local user
can connect too, and must not read or write what the server holds. `--no-token` turns the check off, on loopback
only and said aloud. A non-loopback host needs `--allow-remote` and CTXKEEP_HTTP_TOKEN. Request bodies may be as large
as over stdio (CTXKEEP_MAX_REQUEST_BYTES, room for a 64 MiB evidence batch); a larger one is read past, never held,
and answered 413 with a JSON-RPC error naming the limit, at the request's id. A body that is not one valid JSON-RPC
message gets the same errors as over stdio (400), at the request's id when it can be read.

Once the database holds user tokens (`ctxkeep token create`), only those are accepted (`http_users`), also by a
server started before the first one was made: the mode is read while serving, not decided at start. Before any token
check, `http_limits` times out unfinished requests and caps the connections.
"""

from __future__ import annotations

import hmac
import json
import shlex
import sys
from pathlib import Path
from typing import Any

from mcp.types import JSONRPCError

from ctxkeep.db_location import shown_location
from ctxkeep.errors import InvalidInput
from ctxkeep.server.http_token import MIN_TOKEN_CHARS, load_or_create_token, token_path
from ctxkeep.server.jsonrpc_check import check, oversize
from ctxkeep.server.jsonrpc_scan import Scan
from ctxkeep.settings import Settings

ASGIApp = Any
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")  # the hosts the SDK guards against DNS rebinding


def is_loopback(host: str) -> bool:
    """Only the three spellings the SDK protects: another loopback address (127.0.0.2) is treated as remote."""
    return host.strip("[]") in LOOPBACK_HOSTS


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


async def _respond(send: Any, status: int, body: bytes, *headers: tuple[bytes, bytes]) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"application/json"), *headers]}
    )
    await send({"type": "http.response.body", "body": body})


class BearerToken:
    """ASGI middleware: requests without `Authorization: Bearer <token>` get 401 and never reach the server."""

    def __init__(self, app: ASGIApp, token: str, where: str) -> None:
        self.app, self._expected, self._where = app, token.encode(), where

    def _authorized(self, header: bytes) -> bool:
        scheme, _, credentials = header.strip().partition(b" ")
        return scheme.lower() == b"bearer" and hmac.compare_digest(
            credentials.strip(), self._expected
        )  # RFC 7235: any case

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and not self._authorized(
            dict(scope.get("headers") or []).get(b"authorization", b"")
        ):
            message = f"missing or wrong bearer token: send Authorization: Bearer <the token in {self._where}>"
            await _respond(send, 401, json.dumps({"error": message}).encode(), (b"www-authenticate", b"Bearer"))
            return
        await self.app(scope, receive, send)


class JsonRpcBodies:
    """ASGI middleware for POST bodies, the JSON-RPC messages: one over `limit` bytes is read past in pieces (never
    held whole) and answered 413 with the JSON-RPC error naming the limit, at the top-level id a scan of the body
    finds; one that is not a valid JSON-RPC message is answered 400 with the errors `jsonrpc_check` gives (at the
    request's id, where the SDK would say id null, or take an id of the wrong type for a notification and answer
    202). Valid bodies pass unchanged."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length", b"")
        body = await self._read(receive, Scan() if declared.isdigit() and int(declared) > self.limit else None)
        if isinstance(body, tuple):
            scan, size = body
            await _respond(send, 413, _errors_json(oversize(scan, size, self.limit)))
        elif body is None:
            return  # the client went away
        elif errors := check(body.strip()):
            await _respond(send, 400, _errors_json(errors))
        else:
            await self.app(scope, _replay(body, receive), send)

    async def _read(self, receive: Any, scan: Scan | None) -> bytes | tuple[Scan, int] | None:
        """The body; past the limit only its scan and size (`scan` given: over the limit from the start); None: the
        client disconnected."""
        pieces: list[bytes] = []
        size, more = 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return None
            piece, more = message.get("body", b""), message.get("more_body", False)
            size += len(piece)
            if scan is None and size > self.limit:  # just went over: scan what was kept, keep no more
                scan = Scan()
                for kept in pieces:
                    scan.feed(kept)
                pieces.clear()
            if scan is None:
                pieces.append(piece)
            else:
                scan.feed(piece)
        return (scan, size) if scan is not None else b"".join(pieces)


def _errors_json(errors: list[JSONRPCError]) -> bytes:
    """One error as an object, several (one per request of a batch) as an array, as JSON-RPC answers a batch."""
    dumped = [error.model_dump(mode="json", by_alias=True, exclude_unset=True) for error in errors]
    return json.dumps(dumped[0] if len(dumped) == 1 else dumped).encode()


def _replay(body: bytes, receive: Any) -> Any:
    """`receive` for the app: the body read, in one message, then what the client sends next (its disconnect)."""
    sent = False

    async def replay() -> Any:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def http_app(settings: Settings, host: str, token: str | None, where: str = "CTXKEEP_HTTP_TOKEN") -> ASGIApp:
    """The ASGI app: the server, its body limit, and the token check when there is a token."""
    from ctxkeep.server.build import build_server
    from ctxkeep.server.handshake import guard_handshake

    server = build_server(settings)
    guard_handshake(server)
    limit = settings.max_request_bytes
    app = JsonRpcBodies(server.streamable_http_app(host=host.strip("[]"), max_request_body_size=limit), limit)
    return BearerToken(app, token, where) if token else app


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
    app = UserTokens(inner, settings.location, settings.busy_timeout_ms, shared=shared)  # the token mode, per request
    uvicorn.run(app, host=bare, port=port, log_level=settings.log_level.lower(), **connection_limits())
