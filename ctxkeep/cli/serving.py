"""What `serve` and `ui` say before they serve: flags that mean nothing without `--http`, a port already in use, and
the one line that tells a person at a terminal which database and project a server uses; and the stdio server itself.

Each problem is one line on stderr (no usage block, no uvicorn traceback); the caller exits 2 for meaningless flags
and 1 for a port in use. `ctxkeep serve` without flags (how every MCP client starts it) comes here without the
command-line parser (`serve_stdio_command`), so that its start imports only what `initialize` needs.
"""

from __future__ import annotations

import errno
import socket
import sys

from ctxkeep.errors import InvalidInput
from ctxkeep.settings import Settings

TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

HTTP_ONLY = (("allow_remote", "--allow-remote"), ("no_token", "--no-token"), ("host", "--host"), ("port", "--port"))


def flags_without_http(args: argparse.Namespace) -> str | None:
    """The line for the first HTTP-only flag given to `serve` without `--http`, or None."""
    if args.http:
        return None
    for dest, flag in HTTP_ONLY:
        if getattr(args, dest) not in (None, False):
            return (
                f"ctxkeep: {flag} applies only to `ctxkeep serve --http` (over stdio there is no address to guard); "
                f"add --http, or drop {flag}"
            )
    return None


def shown_location(settings: Settings) -> str:
    """The database as people may see it: the file, or the PostgreSQL URL without its password."""
    from ctxkeep.db_location import shown_location as shown

    return shown(settings.location)


def stdio_line(settings: Settings) -> str:
    """What `serve` over stdio says when a person started it in a terminal (an MCP client starts it with a pipe)."""
    return (
        f"ctxkeep: serving MCP over stdio (an MCP client talks on stdin/stdout; Ctrl-C stops); database "
        f"{shown_location(settings)}, project {settings.project}"
    )


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on host:port (port 0: any free port), for uvicorn to serve on; InvalidInput (one line) when the
    port is taken or the address cannot be bound."""
    bare = host.strip("[]")
    family = socket.AF_INET6 if ":" in bare else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((bare, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        where = f"[{bare}]:{port}" if ":" in bare else f"{bare}:{port}"
        if exc.errno == errno.EADDRINUSE:
            raise InvalidInput(
                f"{where} is in use (another server listens there); choose another port with --port, "
                "or stop the other server"
            ) from None
        raise InvalidInput(
            f"cannot listen on {where}: {exc.strerror or exc}; choose another --host or --port"
        ) from None
    return sock


def port_free(host: str, port: int) -> None:
    """Raise InvalidInput (one line) when host:port is in use; the port is released again at once."""
    bind(host, port).close()


def serve_over_stdio(settings: Settings) -> int:
    """Serve MCP over stdin/stdout until the client closes stdin; a person at a terminal is told what is served."""
    import anyio

    from ctxkeep.server import build_server
    from ctxkeep.server.stdio_limit import serve_stdio

    if sys.stderr.isatty():
        print(stdio_line(settings), file=sys.stderr, flush=True)
    anyio.run(serve_stdio, build_server(settings), settings.max_request_bytes)
    return 0


def serve_stdio_command() -> int:
    """`ctxkeep serve` with no flags: the settings from the environment, then the stdio server (errors as `ctxkeep`
    prints them)."""
    from ctxkeep.cli.errors import reporting

    return reporting(lambda: serve_over_stdio(Settings.from_env()))
