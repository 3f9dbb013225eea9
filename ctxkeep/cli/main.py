"""The `ctxkeep` command: serve, demo, doctor, install, hooks, and inspection of what is stored.

A thin layer over `ctxkeep.tools`. Exit codes: 0 done; 1 a failure the message explains (an
unknown task or ref, a database problem, a doctor check that failed); 2 invalid arguments.
Hooks always exit 0. Heavy imports (the MCP SDK, tiktoken, rich) happen inside the commands
that need them.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

import anyio

from ctxkeep import __version__
from ctxkeep.cli.errors import reporting
from ctxkeep.cli.inspect import add_inspection_commands
from ctxkeep.cli.journal_commands import add_journal_command
from ctxkeep.cli.memory_commands import add_memory_commands
from ctxkeep.cli.teams import add_team_commands
from ctxkeep.cli.ui.command import add_ui_command
from ctxkeep.clients.table import BY_NAME, CLAUDE_CODE_EVENTS, CLIENTS, scope_help
from ctxkeep.settings import Settings


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.cli import serving

    if problem := serving.flags_without_http(args):
        print(problem, file=sys.stderr)
        return 2
    if args.http:
        from ctxkeep.server.http import serve_http

        host, port = args.host or "127.0.0.1", 8765 if args.port is None else args.port
        serving.port_free(host, port)  # a port in use is one line, not uvicorn's traceback
        serve_http(settings, host, port, os.environ.get("CTXKEEP_HTTP_TOKEN") or None, args.allow_remote, args.no_token)
        return 0
    return serving.serve_over_stdio(settings)


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.cli.demo import run_demo

    # with --db the demo writes into this project, so `ctxkeep tasks` and `show` find it afterwards
    return anyio.run(run_demo, args.db, settings.project if args.db else None)


def cmd_doctor(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.cli.doctor import run_doctor

    return anyio.run(run_doctor, settings, args.json)


def cmd_hook(args: argparse.Namespace, settings: Settings | None) -> int:
    """A client's hook: read the hook JSON on stdin, print what to inject (maybe nothing), always exit 0. (The usual
    forms never get here: `ctxkeep.cli.main` dispatches them before this parser is built.)"""
    from ctxkeep.cli.hook_dispatch import dispatch_hook

    if args.hook in BY_NAME:
        return dispatch_hook(args.hook, args.event or "")
    return dispatch_hook("claude-code", args.hook)


def cmd_install(args: argparse.Namespace, settings: Settings) -> int:
    """Register the server and the hooks in a client (or remove them: `uninstall`); `install --list` shows what each
    client gets."""
    from pathlib import Path

    from ctxkeep.cli import clients

    if args.list:
        print("\n".join(clients.listing()))
        return 0
    if args.client is None:
        print(f"ctxkeep: name the client: {', '.join(BY_NAME)} (or --list)", file=sys.stderr)
        return 2
    keep_env = getattr(args, "keep_env", False)
    for line in clients.run(
        args.command, args.client, args.scope, Path(settings.project), os.environ, args.dry_run, keep_env
    ):
        print(line)
    return 0


def _positive(text: str) -> int:
    value = int(text) if text.strip().isdigit() else 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxkeep", description="Resumable, verified context for agents (an MCP server)."
    )
    parser.add_argument("--version", action="version", version=f"ctxkeep {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    serve = commands.add_parser(
        "serve",
        help="run the MCP server over stdio (what an MCP client starts), or --http",
        description="Run the MCP server. Over stdio (the default) an MCP client starts it and talks on "
        "stdin/stdout; with --http it serves Streamable HTTP on loopback behind a bearer "
        "token. In a terminal it says which database and project it uses.",
    )
    serve.add_argument(
        "--http", action="store_true", help="serve Streamable HTTP at http://HOST:PORT/mcp instead of stdio"
    )
    serve.add_argument("--host", help="with --http: address to bind (default 127.0.0.1; others need --allow-remote)")
    serve.add_argument("--port", type=_positive, help="with --http: port (default 8765)")
    serve.add_argument(
        "--allow-remote",
        action="store_true",
        help="with --http: allow a non-loopback --host (requires CTXKEEP_HTTP_TOKEN)",
    )
    serve.add_argument(
        "--no-token",
        action="store_true",
        help="serve loopback HTTP without a bearer token (any local user can then read and write); by default "
        "CTXKEEP_HTTP_TOKEN or the generated token in http-token beside the database is required",
    )
    serve.set_defaults(run=cmd_serve)
    demo = commands.add_parser(
        "demo",
        help="a coding agent's session with ctxkeep in the loop, on a temporary database",
        description="Replay a coding agent's session (Claude Code's hook inputs fed to `ctxkeep hook`, an MCP "
        "client talking to `ctxkeep serve` over stdio): the user's rule kept verbatim, a large log "
        "shaped with its ref, a failing test and the stop gate, the task saved, a compaction summary "
        "that lost the rule checked and repaired, a save that trusted it refused, and a resume that "
        "gets the state back. With --db it writes into this project (then `ctxkeep tasks` and "
        "`ctxkeep ui` show it); run again, it uses a task of its own (fix-rate-limiter-2, …).",
    )
    demo.add_argument("--db", help="use this database file (and this project) instead of a temporary one")
    demo.set_defaults(run=cmd_demo)
    doctor = commands.add_parser(
        "doctor",
        help="check the database, the project, the tokenizer and each client ctxkeep is installed in",
        description="Say which database, project and tokenizer ctxkeep uses here, check the "
        "database (schema, integrity, file modes) and the set-up of each agent client ctxkeep is "
        "installed in (a hook installed twice included; with none, how to install one); exit 1 "
        "when a check failed (its line says what to do).",
    )
    doctor.add_argument("--json", action="store_true", help="print JSON instead of text")
    doctor.set_defaults(run=cmd_doctor)
    add_inspection_commands(commands, _positive)
    add_memory_commands(commands, _positive)
    add_journal_command(commands, _positive)
    add_team_commands(commands)
    add_ui_command(commands)
    scopes = list(dict.fromkeys(scope for client in CLIENTS for scope in client.scopes))
    for action, text in (
        ("install", "register the server and the hooks in an agent client"),
        ("uninstall", "remove exactly what `install` added"),
    ):
        sub = commands.add_parser(
            action,
            help=text,
            description=f"{text[0].upper()}{text[1:]}: the MCP server and the hooks, "
            "in the client's own configuration files (backed up first, restored byte for byte by "
            "uninstall). --dry-run shows the changes; --list what each client gets.",
        )
        sub.add_argument(
            "client",
            nargs="?",
            choices=list(BY_NAME),
            help="the client (`ctxkeep install --list` shows what each gets)",
        )
        sub.add_argument(
            "--scope",
            choices=scopes,
            default=None,
            help=scope_help(),
        )
        sub.add_argument("--dry-run", action="store_true", help="show the changes, write nothing")
        if action == "install":
            sub.add_argument(
                "--keep-env",
                action="store_true",
                help="claude-code --scope project: keep the env (or cwd) a committed .mcp.json gives ctxkeep's entry; "
                "without it install names them and stops",
            )
        sub.add_argument("--list", action="store_true", help="list the clients, their files, events and limits")
        sub.set_defaults(run=cmd_install)
    hook = commands.add_parser(
        "hook",
        help="a client's hook: `hook <event>` (Claude Code) or `hook <client> <event>` (reads "
        "its JSON on stdin; never fails the user)",
        description="Run one hook event as an agent client calls it: read the hook's JSON on stdin, "
        "print what to add to the model's context (maybe nothing), always exit 0. "
        "`install` registers these; people rarely run them by hand.",
    )
    hook.add_argument(
        "hook",
        choices=[*CLAUDE_CODE_EVENTS, *BY_NAME],
        metavar="EVENT_OR_CLIENT",
        help=f"a Claude Code event ({', '.join(CLAUDE_CODE_EVENTS)}), or a client ({', '.join(BY_NAME)}) "
        "followed by its event (or `worker`: the detached ingest its hooks start)",
    )
    hook.add_argument("event", nargs="?", help="the event, after a client name (e.g. `hook codex SessionStart`)")
    hook.set_defaults(run=cmd_hook, no_settings=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "no_settings", False):  # hooks read their settings themselves (the project comes from their input)
        return int(args.run(args, None))
    return reporting(lambda: int(args.run(args, Settings.from_env())))
