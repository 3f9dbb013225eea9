"""`ctxkeep serve --http`: the same server over Streamable HTTP, on loopback unless told otherwise.

A non-loopback host needs `--allow-remote` and a bearer token (CTXKEEP_HTTP_TOKEN): the server
holds task state, evidence and memories, and must not be readable by a network. With a token set,
every request must carry `Authorization: Bearer <token>`, whatever the host.
"""

from __future__ import annotations

import hmac
import json
from typing import Any

from ctxkeep.errors import InvalidInput
from ctxkeep.settings import Settings

MIN_TOKEN_CHARS = 24
ASGIApp = Any


LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "::1")  # the hosts the SDK guards against DNS rebinding


def is_loopback(host: str) -> bool:
    """Only the three spellings the SDK protects: another loopback address (127.0.0.2) is treated as remote."""
    return host.strip("[]") in LOOPBACK_HOSTS


def check_exposure(host: str, token: str | None, allow_remote: bool) -> None:
    """Raise InvalidInput unless the host is loopback, or remote access is explicit and protected by a token."""
    if token is not None and len(token) < MIN_TOKEN_CHARS:
        raise InvalidInput(f"CTXKEEP_HTTP_TOKEN is shorter than {MIN_TOKEN_CHARS} characters; use a long random one "
                           "(python -c 'import secrets; print(secrets.token_urlsafe(32))')")
    if is_loopback(host):
        return
    if not allow_remote:
        raise InvalidInput(f"--host {host} is not 127.0.0.1, localhost or ::1; add --allow-remote (and set CTXKEEP_HTTP_TOKEN) to "
                           "serve it, or leave --host at 127.0.0.1")
    if token is None:
        raise InvalidInput(f"serving {host} needs a bearer token: set CTXKEEP_HTTP_TOKEN to a long random value")


class BearerToken:
    """ASGI middleware: requests without `Authorization: Bearer <token>` get 401 and never reach the server."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app, self._expected = app, f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self._expected):
                body = json.dumps({"error": "missing or wrong bearer token: send Authorization: Bearer <CTXKEEP_HTTP_TOKEN>"}).encode()
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"), (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def http_app(settings: Settings, host: str, token: str | None) -> ASGIApp:
    from ctxkeep.server.app import build_server

    app = build_server(settings).streamable_http_app(host=host.strip("[]"))
    return BearerToken(app, token) if token else app


def serve_http(settings: Settings, host: str, port: int, token: str | None, allow_remote: bool) -> None:
    import uvicorn

    check_exposure(host, token, allow_remote)
    uvicorn.run(http_app(settings, host, token), host=host, port=port, log_level=settings.log_level.lower())
