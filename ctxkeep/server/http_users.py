"""`serve --http` with per-user tokens (`ctxkeep token create`): every request must carry one of them; it works in a
project the token grants, as that user.

The project is the `X-Ctxkeep-Project` header, or the token's only project. A missing, malformed, unknown, wrong or
revoked token gets one and the same 401, and a project the token does not grant one and the same 403 whether or not
the project exists: a refusal reveals nothing about what the server holds. Tokens are looked up in the database on
every request, so a revocation applies to the next request. Whether the database holds user tokens at all is read per
request too (`UserTokens(shared=…)`): a server started with its shared token takes the user tokens created while it
runs, from the next request on, and refuses the shared token from then on. While the database cannot be reached,
every request gets 503 with a JSON-RPC error at its id that says so (one log line each); the next request after it is
back is served.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from ctxkeep.errors import CtxkeepError, InvalidInput
from ctxkeep.db_location import DEFAULT_DB_TIMEOUT_MS
from ctxkeep.server.http_app import http_app, is_loopback
from ctxkeep.server.jsonrpc_check import answers
from ctxkeep.server.jsonrpc_scan import Scan
from ctxkeep.server.principal import PRINCIPAL, Principal
from ctxkeep.settings import Settings
from ctxkeep.storage import open_store
from ctxkeep.storage.on_demand import OnDemandStore
from ctxkeep.tools.users import User, authenticate, users_exist

logger = logging.getLogger("ctxkeep")
DATABASE_UNAVAILABLE = -32000  # a JSON-RPC server error: the database cannot serve the request now
RETRY_AFTER_S = 2
PROJECT_HEADER = b"x-ctxkeep-project"
MODE_CHECK_S = 1.0  # how stale the shared-or-user-tokens mode may be (a user token's request reads it at once)
UNAUTHORIZED = "missing, wrong or revoked token: send Authorization: Bearer <your ckt_ token> (ctxkeep token create)"


async def _respond(send: Any, status: int, message: str) -> None:
    headers = [(b"content-type", b"application/json")] + ([(b"www-authenticate", b"Bearer")] if status == 401 else [])
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": json.dumps({"error": message}).encode()})


def _project(user: User, header: bytes | None) -> tuple[str | None, str]:
    """The project the request names (or the token's only one), and the refusal to send when there is none."""
    if header is None:
        if len(user.projects) == 1:
            return user.projects[0], ""
        return (
            None,
            f"name the project with the X-Ctxkeep-Project header: this token grants {len(user.projects)} projects",
        )
    try:
        project = header.decode("utf-8").strip()
    except UnicodeDecodeError:
        return None, "the X-Ctxkeep-Project header is not UTF-8"
    if project.startswith("/"):
        project = os.path.normpath(project)  # as tokens store it: /acme/webapp/ is /acme/webapp (never the disk)
    if project not in user.projects:
        return (
            None,
            f"this token does not grant project {project[:200]!r}: ask for a token that does (ctxkeep token create --project …)",
        )
    return project, ""


class UserTokens:
    """ASGI middleware: authenticates each HTTP request by its user token and runs it as that user in its project.

    `shared`: the app to serve while the database holds no user token (the server's shared token check, or none with
    --no-token). Whether the database holds one is read again at most MODE_CHECK_S after the last read, and at once
    for a request bearing a user token (`ckt_…`): the first user token works at its first request, and the shared
    token stops working within MODE_CHECK_S of it. A read costs about a quarter of a ping over HTTP, so it is not made
    on every request. Tokens are never deleted (only revoked), so once one exists the shared mode is over for good."""

    def __init__(
        self,
        app: Any,
        location: Path | str,
        busy_timeout_ms: int,
        shared: Any | None = None,
        timeout_ms: int = DEFAULT_DB_TIMEOUT_MS,
    ) -> None:
        self.app = app
        self._store = OnDemandStore(location, busy_timeout_ms, timeout_ms)  # opened again after an outage
        self._shared = shared
        self._mode_read_at = -MODE_CHECK_S

    async def _sharing(self, credentials: bytes) -> Any | None:
        """The shared-token app while the database has no user token, else None (from then on, for good)."""
        now = time.monotonic()
        if self._shared is None or (now - self._mode_read_at < MODE_CHECK_S and not credentials.startswith(b"ckt_")):
            return self._shared
        self._mode_read_at = now
        if await users_exist(self._store):
            self._shared = None
            logger.warning("ctxkeep: the database has user tokens now: only they are accepted from this request on")
        return self._shared

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await self.app(scope, self._closing_on_shutdown(receive), send)
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        scheme, _, credentials = headers.get(b"authorization", b"").strip().partition(b" ")
        try:
            shared = await self._sharing(credentials.strip())
        except CtxkeepError as exc:  # the database is down or slow: say so, at the request's id
            await _unavailable(scope, receive, send, exc)
            return
        if shared is not None:
            await shared(scope, receive, send)
            return
        user = None
        if scheme.lower() == b"bearer":
            try:
                user = await authenticate(self._store, credentials.strip().decode("ascii", "replace"))
            except CtxkeepError as exc:  # the database is down or slow: say so, at the request's id
                await _unavailable(scope, receive, send, exc)
                return
        if user is None:
            await _respond(send, 401, UNAUTHORIZED)
            return
        project, refusal = _project(user, headers.get(PROJECT_HEADER))
        if project is None:
            await _respond(send, 403 if PROJECT_HEADER in headers else 400, refusal)
            return
        token = PRINCIPAL.set(Principal(user.name, project))
        try:
            await self.app(scope, receive, send)
        finally:
            PRINCIPAL.reset(token)

    def _closing_on_shutdown(self, receive: Any) -> Any:
        async def wrapped() -> Any:
            message = await receive()
            if message.get("type") == "lifespan.shutdown":
                await self._store.close()
            return message

        return wrapped


async def _unavailable(scope: dict[str, Any], receive: Any, send: Any, exc: CtxkeepError) -> None:
    """503 with the JSON-RPC error that names the database (one per request of the body, at its id), and one log
    line; the body is read past in pieces (never held whole) to find the ids."""
    logger.warning("ctxkeep could not check a token (answered 503): %s", exc)
    scan = Scan()
    if scope.get("method") == "POST":
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            scan.feed(message.get("body", b""))
            more = message.get("more_body", False)
    errors = answers(scan.values(), scan, DATABASE_UNAVAILABLE, str(exc))
    dumped = [error.model_dump(mode="json", by_alias=True, exclude_unset=True) for error in errors]
    body = json.dumps(dumped[0] if len(dumped) == 1 else dumped).encode()
    headers = [(b"content-type", b"application/json"), (b"retry-after", str(RETRY_AFTER_S).encode())]
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def has_users(location: Path | str, busy_timeout_ms: int) -> bool:
    """Whether the database holds per-user tokens (then `serve --http` accepts only those)."""
    store = await open_store(location, busy_timeout_ms)
    try:
        return await users_exist(store)
    finally:
        await store.close()


def serve_with_users(
    settings: Settings, host: str, port: int, token: str | None, allow_remote: bool, no_token: bool
) -> None:
    """`serve --http` when the database holds user tokens: the same bind rules (loopback, else --allow-remote), only
    those tokens accepted (CTXKEEP_HTTP_TOKEN and --no-token are refused: they would let someone in as nobody)."""
    import sys

    import uvicorn

    from ctxkeep.db_location import shown_location
    from ctxkeep.server.http_limits import connection_limits

    if token is not None or no_token:
        raise InvalidInput(
            "this database has per-user tokens (ctxkeep token list): every user sends their own, so unset "
            "CTXKEEP_HTTP_TOKEN and drop --no-token"
        )
    if not is_loopback(host) and not allow_remote:
        raise InvalidInput(
            f"--host {host} is not 127.0.0.1, localhost or ::1; add --allow-remote to serve it (put TLS in "
            "front: a reverse proxy), or leave --host at 127.0.0.1"
        )
    bare = host.strip("[]")
    url = f"http://{f'[{bare}]' if ':' in bare else bare}:{port}/mcp"
    print(
        f"ctxkeep: serving {url} (database {shown_location(settings.location)}) for the users of `ctxkeep token list`; "
        "every request needs Authorization: Bearer <the user's ckt_ token>, and X-Ctxkeep-Project when the token grants "
        "several projects",
        file=sys.stderr,
        flush=True,
    )
    app = UserTokens(
        http_app(settings, host, None), settings.location, settings.busy_timeout_ms, timeout_ms=settings.db_timeout_ms
    )
    uvicorn.run(app, host=bare, port=port, log_level=settings.log_level.lower(), **connection_limits())
