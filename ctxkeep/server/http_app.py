"""The ASGI app `serve --http` serves: the MCP server's Streamable HTTP app behind a body limit, and the bearer token
check it may sit behind.

Request bodies may be as large as over stdio (CTXKEEP_MAX_REQUEST_BYTES, room for a 64 MiB evidence batch); a larger
one is read past, never held, and answered 413 with a JSON-RPC error naming the limit, at the request's id. A body that
is not one valid JSON-RPC message gets the same errors as over stdio (400), at the request's id when it can be read. A
request without the bearer token gets 401. `http.py` serves it with one token, `http_users.py` with per-user tokens.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

from mcp.types import JSONRPCError

from ctxkeep.server.jsonrpc_check import check, oversize
from ctxkeep.server.jsonrpc_scan import Scan
from ctxkeep.settings import Settings

ASGIApp = Any
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")  # the hosts the SDK guards against DNS rebinding


def is_loopback(host: str) -> bool:
    """Only the three spellings the SDK protects: another loopback address (127.0.0.2) is treated as remote."""
    return host.strip("[]") in LOOPBACK_HOSTS


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
