"""The viewer's web app: Starlette routes over one open store, behind `Guard` (the token, loopback hosts only, strict
headers). GET pages only, plus the sign-in form; every page is rendered on the server and escaped."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from ctxkeep.cli.console import say_if_created
from ctxkeep.cli.errors import for_people
from ctxkeep.cli.ui import pages, records, sessions
from ctxkeep.cli.ui.data import injections, overview, session_view, task_view
from ctxkeep.cli.ui.guard import Guard, local_path
from ctxkeep.cli.ui.html import esc, page
from ctxkeep.errors import CtxkeepError, InvalidInput, NotFound
from ctxkeep.settings import Settings
from ctxkeep.tools.scope import Scope, open_scope

STATIC = Path(__file__).resolve().parent / "static"
MAX_SHOWN_TOKENS = 20_000  # of one evidence record on its page


@dataclass
class Viewer:
    settings: Settings
    database: str
    token_file: Path
    scope: Scope | None = None
    hooks: Scope | None = (
        None  # where the hooks keep session state: the SQLite file (the store itself unless PostgreSQL)
    )


def _viewer(request: Request) -> Viewer:
    viewer: Viewer = request.app.state.viewer
    return viewer


def _page(request: Request, title: str, body: str, status: int = 200) -> HTMLResponse:
    viewer = _viewer(request)
    return HTMLResponse(page(title, body, viewer.settings.project, viewer.database), status_code=status)


def _number(request: Request, name: str) -> int:
    text = request.query_params.get(name, "")
    if not text.isdigit() or int(text) < 1:
        raise InvalidInput(f"{name} must be a version number (1 or more), not {text!r}")
    return int(text)


async def home(request: Request) -> Response:
    viewer = _viewer(request)
    assert viewer.scope and viewer.hooks
    return _page(request, "What the agent sees", pages.overview_page(await overview(viewer.scope, viewer.hooks)))


async def task(request: Request) -> Response:
    viewer = _viewer(request)
    assert viewer.scope
    task_id = request.query_params.get("id", "")
    view = await task_view(viewer.scope, task_id)
    return _page(request, f"Task {task_id}", pages.task_page(view))


async def diff(request: Request) -> Response:
    from ctxkeep.tools.checkpoint import checkpoint_diff

    viewer = _viewer(request)
    assert viewer.scope
    task_id = request.query_params.get("id", "")
    first, last = _number(request, "from"), _number(request, "to")
    if first == last:
        raise InvalidInput(f"pick two different versions to compare (both were v{first})")
    if first > last:
        first, last = last, first
    result = await checkpoint_diff(viewer.scope, task_id, first, last)
    async with viewer.scope.store.snapshot() as tx:
        latest = await tx.checkpoints.latest_version(viewer.scope.project, task_id)
    return _page(request, f"Diff of {task_id}", pages.diff_page(task_id, latest, result))


async def evidence(request: Request) -> Response:
    from ctxkeep.models.evidence import EvidenceSearchRequest
    from ctxkeep.tools.evidence import evidence_search

    viewer = _viewer(request)
    assert viewer.scope
    query = request.query_params.get("q", "").strip()[:2_000]
    result = await evidence_search(viewer.scope, EvidenceSearchRequest(query=query, limit=50)) if query else None
    return _page(request, f"Evidence matching “{query}”" if query else "Evidence", records.evidence_page(query, result))


async def evidence_item(request: Request) -> Response:
    from ctxkeep.models.evidence import EvidenceGetRequest
    from ctxkeep.tools.evidence import evidence_get, load_row

    viewer = _viewer(request)
    assert viewer.scope
    ref = request.query_params.get("ref", "").strip().lower()
    item = await evidence_get(viewer.scope, EvidenceGetRequest(ref=ref, max_tokens=MAX_SHOWN_TOKENS))
    async with viewer.scope.store.snapshot() as tx:
        row = await load_row(tx, viewer.scope, item.ref)
    return _page(
        request, f"Evidence {item.ref}", records.evidence_item_page(item, row.task_id, row.created_at, row.redactions)
    )


async def injected(request: Request) -> Response:
    viewer = _viewer(request)
    assert viewer.scope and viewer.hooks
    return _page(request, "Injections", sessions.injections_page(await injections(viewer.scope, viewer.hooks)))


async def session(request: Request) -> Response:
    viewer = _viewer(request)
    assert viewer.scope and viewer.hooks
    session_id = request.query_params.get("id", "")
    view = await session_view(viewer.scope, viewer.hooks, session_id)
    return _page(request, f"Session {session_id}", sessions.session_page(view))


async def memories(request: Request) -> Response:
    from ctxkeep.models.memory import MemorySearchRequest
    from ctxkeep.tools.memory import memory_search

    viewer = _viewer(request)
    assert viewer.scope
    history = request.query_params.get("history") == "1"
    found = await memory_search(viewer.scope, MemorySearchRequest(include_history=history, limit=200))
    return _page(request, "Memories", records.memories_page(found.memories, history, found.not_shown))


async def login(request: Request) -> Response:
    """The sign-in form (GET), or the token checked (GET with ?token=, or the form's POST): a session cookie and a
    redirect to `next` when it is right, the form again (401) when it is not."""
    guard: Guard = request.app.state.guard
    fields: Any = await request.form() if request.method == "POST" else request.query_params
    token, next_path = str(fields.get("token", "")), local_path(str(fields.get("next", "/")))
    viewer = _viewer(request)
    if token and guard.token_matches(token):
        response = RedirectResponse(next_path, status_code=303)
        response.set_cookie(guard.cookie, guard.session, httponly=True, samesite="lax", path="/")
        return response
    body = records.login_page(str(viewer.token_file), bool(token), next_path)
    return HTMLResponse(
        page("Sign in", body, viewer.settings.project, viewer.database), status_code=401 if token else 200
    )


async def style(request: Request) -> Response:
    return FileResponse(STATIC / "style.css", media_type="text/css")


async def _error(request: Request, exc: Exception) -> Response:
    status = 404 if isinstance(exc, NotFound) else 400
    return _page(
        request,
        "Not found" if status == 404 else "Cannot show that",
        f'<p class="bad">{esc(for_people(str(exc)))}</p><p><a href="/">Back to the overview</a></p>',
        status,
    )


def build_app(settings: Settings, database: str, token: str, token_file: Path, port: int) -> Guard:
    """The viewer as an ASGI app (the guard around the routes); the store opens when the server starts."""
    viewer = Viewer(settings, database, token_file)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            viewer.scope = await stack.enter_async_context(open_scope(settings))
            say_if_created(viewer.scope.store)
            # the hooks keep their session state in the local file: the store itself, or its spool beside PostgreSQL
            spool = viewer.scope.spool
            viewer.hooks = Scope(store=spool, project=settings.project) if spool is not None else viewer.scope
            yield

    routes = [
        Route("/", home),
        Route("/task", task),
        Route("/diff", diff),
        Route("/evidence", evidence),
        Route("/evidence/item", evidence_item),
        Route("/injections", injected),
        Route("/session", session),
        Route("/memories", memories),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/static/style.css", style),
    ]
    app = Starlette(routes=routes, lifespan=lifespan, exception_handlers={CtxkeepError: _error, ValueError: _error})
    guard = Guard(app, token, port)
    app.state.viewer, app.state.guard = viewer, guard
    return guard
