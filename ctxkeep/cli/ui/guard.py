"""Who gets into the viewer: the person who can read its token file (`ui-token` beside the database, 0600, made like
`serve --http`'s), on loopback, by a loopback name.

A request passes with `Authorization: Bearer <token>`, or with the session cookie `/login` sets once the token was
given (a secret of this process, not the token: it dies with the server). Anything else gets 401 and the sign-in
page; a Host other than 127.0.0.1, localhost or [::1] at this port gets 403 (a rebinding page cannot read it). Every
response forbids scripts, framing, sniffing, caching and referrers.
"""

from __future__ import annotations

import hmac
import secrets
from typing import Any
from urllib.parse import quote

OPEN_PATHS = ("/login", "/static/style.css")
HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        b"frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


def local_path(text: str) -> str:
    """`text` when it is a path of this viewer ("/task?id=x"), else "/" (never another site: no open redirect)."""
    ok = text.startswith("/") and not text.startswith("//") and "\\" not in text and not any(ord(c) < 32 for c in text)
    return text if ok else "/"


class Guard:
    """ASGI middleware around the viewer: the token check, the Host check and the strict headers."""

    def __init__(self, app: Any, token: str, port: int) -> None:
        self.app, self._token, self.port = app, token.encode(), port
        self.session = secrets.token_urlsafe(32)
        self.cookie = f"ctxkeep_ui_{port}"  # cookies ignore ports: one name per port keeps two viewers apart
        self._hosts = {f"{host}:{port}".encode() for host in ("127.0.0.1", "localhost", "[::1]")}

    def token_matches(self, token: str) -> bool:
        return hmac.compare_digest(token.strip().encode(), self._token)

    def _signed_in(self, headers: dict[bytes, bytes]) -> bool:
        scheme, _, credentials = headers.get(b"authorization", b"").strip().partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._token):
            return True
        for part in headers.get(b"cookie", b"").split(b";"):
            name, _, value = part.strip().partition(b"=")
            if name == self.cookie.encode() and hmac.compare_digest(value, self.session.encode()):
                return True
        return False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])

        async def strict(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *HEADERS]}
            await send(message)

        if headers.get(b"host", b"") not in self._hosts:
            await _plain(strict, 403, "ctxkeep ui answers only at 127.0.0.1, localhost or [::1] with its port")
            return
        if scope["path"] not in OPEN_PATHS and not self._signed_in(headers):
            wanted = scope["path"] + (
                f"?{scope['query_string'].decode('latin-1')}" if scope.get("query_string") else ""
            )
            await _redirect_to_login(strict, wanted)
            return
        await self.app(scope, receive, strict)


async def _plain(send: Any, status: int, text: str) -> None:
    await send(
        {"type": "http.response.start", "status": status, "headers": [(b"content-type", b"text/plain; charset=utf-8")]}
    )
    await send({"type": "http.response.body", "body": text.encode()})


async def _redirect_to_login(send: Any, wanted: str) -> None:
    """401 with a page that links to the sign-in form (keeping where the person wanted to go)."""
    target = "/login?next=" + quote(local_path(wanted), safe="")
    body = (
        f'<!doctype html><meta charset="utf-8"><title>Sign in · ctxkeep</title><link rel="stylesheet" '
        f'href="/static/style.css"><main><h1>Sign in</h1><p>This page needs the viewer\'s token. '
        f'<a href="{target}">Sign in</a>.</p></main>'
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [(b"content-type", b"text/html; charset=utf-8"), (b"www-authenticate", b"Bearer")],
        }
    )
    await send({"type": "http.response.body", "body": body})
