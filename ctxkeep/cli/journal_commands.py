"""`ctxkeep journal [--open]`: the side effects agents journaled (an intent before, its result after), newest first.

An open entry is an intent without a result: its outcome is unknown, and it must be looked up in the system of
record before anyone retries it. `--open` lists only those; `--json` prints the entries for scripts.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ctxkeep.cli.console import print_json, print_table
from ctxkeep.cli.inspect import with_scope
from ctxkeep.settings import Settings

if TYPE_CHECKING:  # the parser is built at every start of `ctxkeep serve`: no models imported for it
    from ctxkeep.models.journal import Action


def outcome(entry: Action) -> str:
    """The entry's result in a few words (an open one says its outcome is unknown)."""
    if entry.status == "open":
        return "OPEN: outcome unknown (check the system of record before retrying)"
    parts = [
        entry.status,
        f"at {entry.result_at:%Y-%m-%d %H:%M}" if entry.result_at else "",
        f"external id {entry.external_id}" if entry.external_id else "",
        f"receipt {entry.receipt_ref}" if entry.receipt_ref else "",
    ]
    return " ".join(part for part in parts if part)


def cmd_journal(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.tools.journal import journal_entries

    entries = with_scope(settings, lambda scope: journal_entries(scope, args.open, args.limit, args.task))
    if args.json:
        print_json(
            {
                "entries": [entry.model_dump(mode="json") for entry in entries],
                "open": sum(1 for entry in entries if entry.status == "open"),
            }
        )
        return 0
    if not entries:
        print("no open intents in this project" if args.open else "no side effects journaled in this project yet")
        return 0
    waiting = sum(1 for entry in entries if entry.status == "open")
    title = (
        f"journal of {settings.project}"
        + (f" (task {args.task})" if args.task else "")
        + (f": {waiting} open intent(s)" if waiting else "")
    )
    print_table(
        title,
        ["intended", "task", "key", "action", "target", "outcome"],
        [
            (
                f"{e.intent_at:%Y-%m-%d %H:%M}",
                e.task_id,
                e.idempotency_key,
                " ".join(e.action.split())[:60],
                " ".join(e.target.split())[:60],
                outcome(e),
            )
            for e in entries
        ],
    )
    return 0


def add_journal_command(commands: Any, positive: Any) -> None:
    """`ctxkeep journal`."""
    journal: argparse.ArgumentParser = commands.add_parser(
        "journal",
        help="the side effects journaled, newest first (--open: outcome unknown)",
        description="The action journal: each external side effect an agent recorded before performing it (an intent) "
        "and its result after, newest first. An open intent has no result: its outcome is unknown, so look "
        "it up in the system of record before retrying.",
    )
    journal.add_argument("--open", action="store_true", help="only intents without a result (outcome unknown)")
    journal.add_argument("--task", help="only this task's entries (`ctxkeep tasks` lists the tasks)")
    journal.add_argument("--limit", type=positive, default=100, help="at most this many entries (default 100)")
    journal.add_argument("--json", action="store_true", help="print JSON (stable keys) instead of text")
    journal.set_defaults(run=cmd_journal)
