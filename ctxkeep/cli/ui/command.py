"""`ctxkeep ui [--port N] [--open]`: serve the viewer on 127.0.0.1 until interrupted.

The token is the one in `ui-token` beside the database (made 0600 when missing, as `serve --http` makes its own).
The line on stderr names the address and the token file, never the token (stderr may be kept in a shared log); a
sign-in file beside it (`ui-sign-in.html`, 0600) signs the browser in when opened, which `--open` does.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from ctxkeep.settings import Settings

TOKEN_FILE = "ui-token"
SIGN_IN_FILE = "ui-sign-in.html"
DEFAULT_PORT = 8766


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"expected a port from 0 to 65535 (0: any free port), got {text!r}")
    return int(text)


def write_sign_in(path: Path, url: str, token: str) -> None:
    """A private page that posts the token to the viewer's sign-in form when a browser opens it (0600, replaced whole)."""
    import html

    page = (
        f'<!doctype html><meta charset="utf-8"><title>ctxkeep ui: signing in</title><body>'
        f'<form method="post" action="{html.escape(url)}login"><input type="hidden" name="token" value="{html.escape(token)}">'
        '<input type="hidden" name="next" value="/"><noscript><button>Sign in to ctxkeep ui</button></noscript></form>'
        "<script>document.forms[0].submit()</script></body>"
    )
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        os.write(fd, page.encode())
    finally:
        os.close(fd)
    os.replace(temporary, path)


def cmd_ui(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from ctxkeep.cli.serving import bind, shown_location
    from ctxkeep.cli.ui.app import build_app
    from ctxkeep.server.http_token import load_or_create_token

    sock = bind("127.0.0.1", args.port)  # a port in use is one line, before anything else happens
    port = sock.getsockname()[1]
    token_file = settings.db_path.parent / TOKEN_FILE
    token = load_or_create_token(token_file)
    url = f"http://127.0.0.1:{port}/"
    sign_in = settings.db_path.parent / SIGN_IN_FILE
    write_sign_in(sign_in, url, token)
    database = shown_location(settings)
    print(
        f"ctxkeep ui: {url} (database {database}, project {settings.project}); sign in with the token in {token_file}, "
        f"or open {sign_in.as_uri()}",
        file=sys.stderr,
        flush=True,
    )
    if args.open:
        import webbrowser

        webbrowser.open(sign_in.as_uri())
    config = uvicorn.Config(build_app(settings, database, token, token_file, port), log_level="warning", lifespan="on")
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0


def add_ui_command(commands: Any) -> None:
    """`ctxkeep ui`."""
    ui: argparse.ArgumentParser = commands.add_parser(
        "ui",
        help="a local, read-only web page of what the agent sees (tasks, working sets, injections, evidence, memories)",
        description="Serve a read-only web page on 127.0.0.1: each task's version timeline with the diff between any "
        "two versions and the verification results; the working sets and injections as the model received "
        "them, each slot's token share drawn as a bar; the evidence behind them (searchable, with its "
        "source); open approvals and intents highlighted; memories with their provenance. Only someone who "
        "can read the token file beside the database gets in.",
    )
    ui.add_argument(
        "--port", type=_port, default=DEFAULT_PORT, help=f"port on 127.0.0.1 (default {DEFAULT_PORT}; 0: any free port)"
    )
    ui.add_argument("--open", action="store_true", help="open the page in the browser, signed in")
    ui.set_defaults(run=cmd_ui)
