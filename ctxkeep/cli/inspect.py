"""The inspection commands of `ctxkeep`: what is stored, for people (tables, markdown) and scripts (`--json`).

Each command opens the database, calls one function of `ctxkeep.tools`, and prints; errors reach
`ctxkeep.cli`, which turns them into one line on stderr and an exit code.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from ctxkeep.cli.console import print_json, print_markdown, print_table, print_text, say_if_created
from ctxkeep.settings import Settings

T = TypeVar("T")


def with_scope(settings: Settings, work: Callable[[Any], Awaitable[T]]) -> T:
    """Run `work(scope)` on the settings' database (opened and closed around it)."""
    from ctxkeep.tools.scope import open_scope

    async def run() -> T:
        async with open_scope(settings) as scope:
            say_if_created(scope.store)
            return await work(scope)

    return anyio.run(run)


def cmd_tasks(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.tools.checkpoint import checkpoint_list

    result = with_scope(settings, lambda scope: checkpoint_list(scope, args.limit))
    if args.json:
        print_json(result)
    elif not result.tasks:
        print("no tasks in this project yet (ctxkeep doctor shows which project this is)")
    else:
        print_table(
            f"tasks of {settings.project}",
            ["task", "version", "updated", "pending", "approvals waiting", "goal"],
            [
                (
                    t.task_id,
                    t.latest_version,
                    t.updated_at.strftime("%Y-%m-%d %H:%M"),
                    t.pending,
                    t.pending_approvals,
                    t.goal[:80],
                )
                for t in result.tasks
            ],
        )
    return 0


def cmd_show(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.tools.checkpoint import checkpoint_load

    loaded = with_scope(settings, lambda scope: checkpoint_load(scope, args.task_id, args.version))
    if args.json:
        print_json(loaded.state)
    else:
        print_markdown(loaded.brief)
    return 0


def cmd_diff(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.tools.checkpoint import checkpoint_diff

    result = with_scope(
        settings, lambda scope: checkpoint_diff(scope, args.task_id, args.from_version, args.to_version)
    )
    if args.json:
        print_json(result)
        return 0
    marks = {"added": "+", "removed": "-", "changed": "~"}
    print_table(
        f"{args.task_id} v{args.from_version} -> v{args.to_version}: {len(result.changes)} change(s)",
        ["", "field", "item", "before", "after"],
        [
            (marks[c.op], c.field, c.item, "" if c.before is None else c.before, "" if c.after is None else c.after)
            for c in result.changes
        ],
    )
    return 0


def cmd_handoff(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.prompts.handoff import handoff_text
    from ctxkeep.tools.checkpoint import handoff

    package = with_scope(settings, lambda scope: handoff(scope, args.task_id))
    if args.json:
        print_json(package)
    else:
        print_markdown(handoff_text(package))
    return 0


def cmd_evidence_get(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.models.evidence import EvidenceGetRequest
    from ctxkeep.tools.evidence import evidence_get

    fields = {
        "mode": args.mode,
        "n": args.n,
        "start": args.start,
        "end": args.end,
        "pattern": args.pattern,
        "chunk": args.chunk,
        "max_tokens": args.max_tokens,
    }
    request = EvidenceGetRequest(ref=args.ref, **{k: v for k, v in fields.items() if v is not None})
    result = with_scope(settings, lambda scope: evidence_get(scope, request))
    if args.json:
        print_json(result)
        return 0
    print_text(result.content)
    if result.truncated and result.next:
        print(f"[truncated: {result.next}]")
    return 0


def cmd_search(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.models.evidence import EvidenceSearchRequest
    from ctxkeep.tools.evidence import evidence_search

    result = with_scope(
        settings, lambda scope: evidence_search(scope, EvidenceSearchRequest(query=args.query, limit=args.limit))
    )
    if args.json:
        print_json(result)
    elif not result.hits:
        print(f"no evidence matches {args.query!r}")
    else:
        print_table(
            f"evidence matching {args.query!r}",
            ["#", "ref", "score", "title", "snippet"],
            [
                (str(h.rank), h.ref, f"{h.score:.2f}", h.title or "", " ".join(h.snippet.split())[:100])
                for h in result.hits
            ],
        )
    return 0


def cmd_working_set(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.models.working_set import WorkingSetRequest
    from ctxkeep.tools.working_set import build_working_set

    request = WorkingSetRequest(task_id=args.task_id, focus=args.focus, budget_tokens=args.budget)
    result = with_scope(settings, lambda scope: build_working_set(scope, request, record=False))
    if args.json:
        print_json(result)
        return 0
    print_markdown(result.text or "")
    rows: list[tuple[Any, ...]] = [
        (b.slot, result.slot_budgets.get(b.slot, ""), b.tokens, b.items, "yes" if b.stable else "")
        for b in result.blocks
    ]
    rows.append(("total", result.budget_tokens, result.tokens_total, "", ""))
    print_table(
        f"working set of {result.task_id} v{result.version} (focus: {result.focus[:60]})",
        ["slot", "budget", "tokens", "items", "stable"],
        rows,
    )
    if result.dropped:
        print(
            f"left out or cut: {len(result.dropped) + result.dropped_more} item(s), e.g. "
            + "; ".join(f"{d.slot}: {d.item[:40]} ({d.reason})" for d in result.dropped[:3])
        )
    return 0


def cmd_stats(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.tools.stats import project_stats

    stats = with_scope(settings, project_stats)
    if args.json:
        print_json(stats)
        return 0
    rows = [(name, f"{count:,}") for name, count in stats.counts.items()]
    rows.append(("database file (all projects), bytes", f"{stats.database_bytes:,}"))
    print_table(f"{stats.project} in {stats.database}", ["what", "count"], rows)
    return 0


def cmd_gc(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.tools.evidence import evidence_gc

    result = with_scope(settings, evidence_gc)
    if args.json:
        print_json(result)
        return 0
    print(
        f"deleted {len(result.deleted)} expired evidence item(s); removed {result.orphan_blobs_removed} unused blob(s)"
    )
    for ref in result.kept_cited:
        print(f"kept {ref}: expired, but a task's latest checkpoint cites it")
    return 0


def evidence_ref_arg(text: str) -> str:
    """An evidence ref as typed: `ev_` and hex digits (any case); how many digits are enough is the store's to say."""
    ref = text.strip().lower()
    if not re.fullmatch(r"ev_[0-9a-f]+", ref):
        raise argparse.ArgumentTypeError(
            f"expected an evidence ref: ev_ followed by hex digits (e.g. ev_3f2a9c, at least 6 of "
            f"them, as `ctxkeep search` shows), got {text!r}"
        )
    return ref


def add_inspection_commands(commands: Any, positive: Callable[[str], int]) -> None:
    """The inspection subcommands, each with --json."""

    def command(
        name: str, text: str, run: Callable[[argparse.Namespace, Settings], int], about: str
    ) -> argparse.ArgumentParser:
        sub: argparse.ArgumentParser = commands.add_parser(name, help=text, description=about)
        sub.add_argument("--json", action="store_true", help="print JSON (stable keys) instead of text")
        sub.set_defaults(run=run)
        return sub

    command(
        "tasks",
        "list this project's tasks, newest first",
        cmd_tasks,
        "List the tasks saved in this project (`ctxkeep doctor` shows which project that is): latest version, last "
        "update, pending items and approvals waiting.",
    ).add_argument("--limit", type=positive, default=50, help="at most this many tasks (default 50)")
    show = command(
        "show",
        "print a task's resume brief (latest version unless --version); --json: its state",
        cmd_show,
        "Print the resume brief a restarted agent reads for a task: goal, rules, what is done and pending, facts "
        "with sources, approvals and side effects waiting. --json prints the stored state instead.",
    )
    show.add_argument("task_id", help="the task (`ctxkeep tasks` lists them)")
    show.add_argument("--version", type=positive, help="a stored version number (default: the latest)")
    diff = command(
        "diff",
        "what changed between two versions of a task",
        cmd_diff,
        "What changed between two stored versions of a task, field by field: + added, - removed, ~ changed.",
    )
    diff.add_argument("task_id", help="the task (`ctxkeep tasks` lists them)")
    diff.add_argument("from_version", type=positive, help="the older version")
    diff.add_argument("to_version", type=positive, help="the newer version")
    command(
        "handoff",
        "a task's handoff package (goal, done, remaining, facts, artifacts, next action)",
        cmd_handoff,
        "The handoff document for a new owner of a task: goal and done criteria, what is completed and how it was "
        "verified, what remains, facts apart from assumptions, artifacts and external ids, side effects whose outcome "
        "is unknown, and the next action with the preconditions it needs.",
    ).add_argument("task_id", help="the task (`ctxkeep tasks` lists them)")
    evidence = commands.add_parser(
        "evidence",
        help="stored evidence",
        description="Stored evidence: raw tool outputs, files "
        "and documents kept out of the context, brought back by ref.",
    ).add_subparsers(dest="evidence_command", required=True, metavar="COMMAND")
    get: argparse.ArgumentParser = evidence.add_parser(
        "get",
        help="print stored evidence (whole, or the part you ask for)",
        description="Print a stored evidence record exactly as stored (secrets redacted), whole or the part asked for: "
        "head/tail lines, a line range, grep matches or one chunk. A long part says how to get the rest.",
    )
    get.add_argument(
        "ref", type=evidence_ref_arg, help="an evidence ref (ev_…), or its start with at least 6 hex digits"
    )
    get.add_argument(
        "--mode",
        choices=["full", "head", "tail", "lines", "grep", "chunk"],
        help="which part: full (the default), head or tail (--n lines), lines (--start, --end), grep (--pattern) or chunk (--chunk)",
    )
    for flag, kind, text in (
        ("--n", positive, "head/tail: how many lines from the start or the end"),
        ("--start", positive, "lines: the first line to print (1 is the first)"),
        ("--end", positive, "lines: the last line to print"),
        ("--chunk", int, "chunk: which chunk (0 is the first; the record's chunk count is in --json)"),
        ("--max-tokens", positive, "print at most this many tokens; the rest is named, not lost"),
    ):
        get.add_argument(flag, type=kind, help=text)
    get.add_argument("--pattern", help="grep: a regular expression")
    get.add_argument("--json", action="store_true", help="print JSON instead of the content")
    get.set_defaults(run=cmd_evidence_get)
    search = command(
        "search",
        "search this project's evidence",
        cmd_search,
        "Search this project's evidence (stemmed English, CJK too), best match first, with each hit's ref.",
    )
    search.add_argument("query", help="words to look for")
    search.add_argument("--limit", type=positive, default=10, help="at most this many hits (default 10, at most 50)")
    working = command(
        "working-set",
        "the context build_working_set would give a task, with its slot/token breakdown",
        cmd_working_set,
        "The context the next step of a task would get (policy, goal, state, memory, history, "
        "evidence, recent, next action) within a token budget, and how each slot used its share. Nothing is "
        "recorded: the task's stored selection stays as it was.",
    )
    working.add_argument("task_id", help="the task (`ctxkeep tasks` lists them)")
    working.add_argument("--focus", help="what the next step is about (default: the task's next action)")
    working.add_argument("--budget", type=positive, default=8_000, help="tokens (default 8,000; any size here)")
    command(
        "stats",
        "what this project holds",
        cmd_stats,
        "How many tasks, versions, evidence records, memories and journal "
        "entries this project holds, and the database file's size.",
    )
    command(
        "gc",
        "delete expired evidence (keeps what a checkpoint cites) and unused blobs",
        cmd_gc,
        "Delete expired evidence (a record a task's latest checkpoint cites is kept) and blobs no record uses.",
    )
