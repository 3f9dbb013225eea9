"""Team commands: `ctxkeep token create|list|revoke` (a shared server's per-user tokens) and `ctxkeep export TASK` /
`ctxkeep import BUNDLE` (task bundles exchanged through git, for teams without a server).

Tokens are created in the database CTXKEEP_DB names (the one `serve --http` serves); a token is printed once, on
stdout, and never again (`list` shows ids, users and projects). `export` writes the bundle to stdout or `-o FILE`;
`import` reads a file (or `-` for stdin) into this project.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ctxkeep.cli.console import print_json, print_table
from ctxkeep.cli.inspect import with_scope
from ctxkeep.settings import Settings


def _on_store(settings: Settings, work: Any) -> Any:
    return with_scope(settings, lambda scope: work(scope.store))


def cmd_token(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.tools import users

    if args.action == "create":
        token, user = _on_store(settings, lambda store: users.create_token(store, args.user, args.project or []))
        print(token)
        print(
            f"ctxkeep: token {user.token_id} for {user.name} ({', '.join(user.projects)}); it is shown only this once: "
            "hand it to the user, who sends it as Authorization: Bearer <token>",
            file=sys.stderr,
        )
        return 0
    if args.action == "revoke":
        _on_store(settings, lambda store: users.revoke_token(store, args.token_id))
        print(f"ctxkeep: token {args.token_id} revoked; the next request with it is refused", file=sys.stderr)
        return 0
    rows = _on_store(settings, users.list_tokens)
    if args.json:
        print_json(
            [
                {
                    "id": r.token_id,
                    "user": r.user,
                    "projects": json.loads(r.projects_json),
                    "created_at": r.created_at,
                    "revoked_at": r.revoked_at,
                }
                for r in rows
            ]
        )
    elif not rows:
        print("no user tokens in this database (ctxkeep token create --user NAME --project KEY)")
    else:
        print_table(
            "user tokens",
            ["id", "user", "projects", "created", "revoked"],
            [
                [
                    r.token_id,
                    r.user,
                    ", ".join(json.loads(r.projects_json)),
                    r.created_at[:19],
                    (r.revoked_at or "")[:19],
                ]
                for r in rows
            ],
        )
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.tools.checkpoint import export_bundle

    text: str = with_scope(settings, lambda scope: export_bundle(scope, args.task_id))
    if args.output in (None, "-"):
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"ctxkeep: wrote {args.output} ({len(text.encode()):,} bytes)", file=sys.stderr)
    return 0


def _bundle_text(name: str) -> str:
    """The bundle file's text (`-`: stdin); raises InvalidInput when it cannot be read as UTF-8 text."""
    from ctxkeep.errors import InvalidInput

    try:
        data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
        return data.decode("utf-8")
    except OSError as exc:
        raise InvalidInput(
            f"cannot read the bundle {name}: {exc.strerror}; send a file `ctxkeep export` wrote"
        ) from None
    except UnicodeDecodeError as exc:
        raise InvalidInput(
            f"the bundle {name} is not UTF-8 text (byte {exc.start:,}); send a file `ctxkeep export` wrote"
        ) from None


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    """Exit 2 for a malformed bundle (one line: what and where), 1 for one a check refuses, 0 when merged."""
    from ctxkeep.cli.errors import describe
    from ctxkeep.errors import InvalidInput
    from ctxkeep.tools.checkpoint import import_bundle

    try:
        text = _bundle_text(args.bundle)
        done = with_scope(settings, lambda scope: import_bundle(scope, text))
    except InvalidInput as exc:
        print(describe(exc)[0], file=sys.stderr)
        return 2
    if done.added_versions:
        print(
            f"imported {done.task_id}: versions {done.added_versions[0]} to {done.added_versions[-1]} added, "
            f"{done.added_evidence} evidence record(s); latest v{done.latest_version} {done.latest_hash[:12]}"
        )
    else:
        print(f"{done.task_id} is up to date here (v{done.latest_version} {done.latest_hash[:12]}): nothing to add")
    for theirs, mine in done.redacted_evidence.items():
        print(
            f"evidence {theirs} held a secret: stored redacted as {mine} (the states cite {theirs}, which stays missing)"
        )
    return 0


def add_team_commands(commands: Any) -> None:
    token = commands.add_parser(
        "token",
        help="per-user tokens of a shared `serve --http` (create, list, revoke)",
        description="Per-user bearer tokens for `ctxkeep serve --http`, stored hashed in the database, "
        "each scoped to the projects it may see. Once a database has any, the server "
        "accepts only these. create prints the token once.",
    )
    actions = token.add_subparsers(dest="action", required=True, metavar="ACTION")
    create = actions.add_parser(
        "create", help="a new token for a user, granting projects", description="Create a token; it is printed once."
    )
    create.add_argument("--user", required=True, help="who it is for (recorded in every checkpoint version they save)")
    create.add_argument(
        "--project",
        action="append",
        required=True,
        help="a project key the token may see (repeatable), normalized as CTXKEEP_PROJECT is (absolute, no trailing "
        "slash, the git top-level); clients name it in X-Ctxkeep-Project",
    )
    listing = actions.add_parser(
        "list",
        help="the tokens: ids, users, projects, revoked or not (never the secrets)",
        description="List the tokens (never their secrets).",
    )
    listing.add_argument("--json", action="store_true", help="print JSON instead of a table")
    revoke = actions.add_parser(
        "revoke",
        help="revoke a token by id (the next request with it is refused)",
        description="Revoke a token by its id, as `token list` shows it.",
    )
    revoke.add_argument("token_id", help="the token's id (8 hex digits)")
    token.set_defaults(run=cmd_token)
    export = commands.add_parser(
        "export",
        help="write a task's bundle (chain, cited evidence, digest) to commit into git",
        description="Write one task's deterministic bundle: every checkpoint version, the evidence "
        "its states cite and its history digest, as JSON (stdout, or -o FILE).",
    )
    export.add_argument("task_id", help="the task to export")
    export.add_argument("-o", "--output", help="write to this file instead of stdout")
    export.set_defaults(run=cmd_export)
    imported = commands.add_parser(
        "import",
        help="merge a task bundle into this project (verified; a diverging history is refused)",
        description="Verify a bundle (its sha256, the hash chain, the evidence) and add the "
        "versions this project lacks; a history that forks from this one's is refused "
        "naming the version where it forks.",
    )
    imported.add_argument("bundle", help="the bundle file (- for stdin)")
    imported.set_defaults(run=cmd_import)
