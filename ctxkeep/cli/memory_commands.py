"""`ctxkeep memory list|show|forget`: the long-term memories of this project, with where each comes from.

`list` shows what is in force (or every version with --history), `show` one memory or every version of a key, and
`forget` removes a memory (or a key's every version) with what was derived from it. `forget` asks first when a person
is at the terminal; without one it needs `--yes`. Each command has `--json`.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from ctxkeep.cli.console import print_json, print_table, safe
from ctxkeep.cli.inspect import with_scope
from ctxkeep.settings import Settings

if TYPE_CHECKING:  # the parser is built at every start of `ctxkeep serve`: no models imported for it
    from ctxkeep.models.memory import Memory

KINDS = ("user_preference", "task_fact", "project_policy", "skill")


def provenance(memory: Memory) -> str:
    """Where a memory comes from, in a few words: its owner and review, the user's message, the receipt or task."""
    s = memory.source
    parts = [
        f"owner {s.owner}" if s.owner else "",
        f"review {s.review_status}" if s.review_status else "",
        f"user message {s.source_message_id}" if s.source_message_id else "",
        "confirmed by the user" if s.explicit_confirmation else "",
        f"receipt {s.evidence_ref}" if s.evidence_ref else "",
        f"task {s.task_id}" + (f" v{s.source_version}" if s.source_version else "") if s.task_id else "",
    ]
    return ", ".join(part for part in parts if part) or "no source recorded"


def _dates(memory: Memory) -> str:
    effective = f", effective {memory.effective_at:%Y-%m-%d}" if memory.effective_at else ""
    expires = f", expires {memory.expires_at:%Y-%m-%d}" if memory.expires_at else ", no expiry"
    return f"written {memory.created_at:%Y-%m-%d %H:%M}{effective}{expires}"


def _is_id(text: str) -> bool:
    return text.startswith("mem_") and len(text) == 20 and all(c in "0123456789abcdef" for c in text[4:])


def _versions(settings: Settings, target: str) -> list[Memory]:
    """The memory `target` names: one version by id, or every version of a key (newest first); NotFound when none."""
    from ctxkeep.errors import NotFound
    from ctxkeep.models.memory import MemorySearchRequest
    from ctxkeep.tools.memory import memory_get, memory_search

    if _is_id(target):
        return [with_scope(settings, lambda scope: memory_get(scope, target))]
    found = with_scope(
        settings, lambda scope: memory_search(scope, MemorySearchRequest(key=target, include_history=True, limit=200))
    )
    if not found.memories:
        raise NotFound(
            f"no memory id or key {target!r} in this project; `ctxkeep memory list` shows the memories, their "
            "keys and ids"
        )
    return found.memories


def cmd_memory_list(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.models.memory import MemorySearchRequest
    from ctxkeep.tools.memory import memory_search

    request = MemorySearchRequest(query=args.query, kind=args.kind, include_history=args.history, limit=args.limit)
    result = with_scope(settings, lambda scope: memory_search(scope, request))
    if args.json:
        print_json(result)
        return 0
    if not result.memories:
        print("no memories in this project yet" if args.query is None else f"no memory matches {args.query!r}")
        return 0
    print_table(
        f"memories of {settings.project}",
        ["id", "kind", "key", "status", "content", "provenance"],
        [
            (m.memory_id, m.kind, m.key, m.status, " ".join(m.content.split())[:80], provenance(m))
            for m in result.memories
        ],
    )
    if result.not_shown:
        print(f"{result.not_shown} older, expired or scheduled version(s) not shown (--history shows them)")
    return 0


def cmd_memory_show(args: argparse.Namespace, settings: Settings) -> int:
    versions = _versions(settings, args.memory)
    if args.json:
        print_json({"memories": [m.model_dump(mode="json") for m in versions]})
        return 0
    for memory in versions:
        print(safe(f"{memory.memory_id}  {memory.kind} '{memory.key}' v{memory.version}: {memory.status}"))
        print(safe(f"  {memory.content}"))
        print(safe(f"  from: {provenance(memory)}; confidence {memory.confidence:g}"))
        print(f"  {_dates(memory)}")
        print(f"  forget: ctxkeep memory forget {memory.memory_id}")
    return 0


def _confirmed(versions: list[Memory], target: str) -> bool:
    """Ask on the terminal; True when the person typed y or yes."""
    what = (
        f"{versions[0].memory_id} ({versions[0].kind} '{versions[0].key}')"
        if _is_id(target)
        else f"every version of key '{target}' ({len(versions)}: {', '.join(m.memory_id for m in versions[:5])})"
    )
    print(safe(f'forget {what}: "{" ".join(versions[0].content.split())[:100]}"?'), file=sys.stderr)
    print(
        "It is removed with the quotes derived from it, for good (a tombstone stays). [y/N] ",
        end="",
        file=sys.stderr,
        flush=True,
    )
    answer = sys.stdin.readline().strip().lower()
    return answer in ("y", "yes")


def cmd_memory_forget(args: argparse.Namespace, settings: Settings) -> int:
    from ctxkeep.models.memory import MemoryForgetRequest
    from ctxkeep.tools.memory import memory_forget

    versions = _versions(settings, args.memory)
    if not args.yes:
        if not sys.stdin.isatty():
            print(
                "ctxkeep: memory forget asks before it forgets, and there is no terminal to ask on; add --yes to forget "
                f"{args.memory!r} (nothing was forgotten)",
                file=sys.stderr,
            )
            return 2
        if not _confirmed(versions, args.memory):
            print("nothing was forgotten", file=sys.stderr)
            return 1
    fields: dict[str, Any] = {"memory_id": args.memory} if _is_id(args.memory) else {"key": args.memory}
    request = MemoryForgetRequest(**fields, reason=args.reason)
    result = with_scope(settings, lambda scope: memory_forget(scope, request))
    if args.json:
        print_json(result)
        return 0
    print(
        f"forgot {len(result.forgotten)} version(s): {', '.join(t.memory_id for t in result.forgotten)}"
        + (" (already forgotten earlier)" if result.already_forgotten else "")
    )
    print(
        f"working sets cleared: {result.working_sets_cleared}; digests scrubbed: {result.digests_scrubbed}; "
        f"write-ahead log cleared: {'yes' if result.wal_cleared else 'not yet (a reader holds it; finished at the next chance)'}"
    )
    for where in result.still_quoted_in:
        print(safe(f"still quoted in {where} (not derived from the memory; delete it there if it must go)"))
    return 0


def add_memory_commands(commands: Any, positive: Any) -> None:
    """`ctxkeep memory list|show|forget`."""
    memory = commands.add_parser(
        "memory",
        help="long-term memories: list, show, forget",
        description="The project's long-term memories (user preferences, task facts, project "
        "policies, skills), each with where it comes from and whether it is in force.",
    )
    sub = memory.add_subparsers(dest="memory_command", required=True, metavar="COMMAND")
    listing: argparse.ArgumentParser = sub.add_parser(
        "list",
        help="the memories in force (newest first), with their provenance",
        description="List the memories in force, newest first (or best match first with --query), each with its kind, "
        "key, status and provenance.",
    )
    listing.add_argument("--query", help="words to look for in keys and contents")
    listing.add_argument("--kind", choices=KINDS, help="only memories of this kind")
    listing.add_argument("--history", action="store_true", help="also superseded, expired and scheduled versions")
    listing.add_argument("--limit", type=positive, default=50, help="at most this many (default 50, at most 200)")
    show: argparse.ArgumentParser = sub.add_parser(
        "show",
        help="one memory by id, or every version of a key",
        description="Show a memory (by its id, mem_…) or "
        "every version of a key: content, kind, status, provenance, dates, and the command that forgets it.",
    )
    show.add_argument("memory", help="a memory id (mem_… as `ctxkeep memory list` shows) or a key")
    forget: argparse.ArgumentParser = sub.add_parser(
        "forget",
        help="remove a memory for good (asks first; --yes without a terminal)",
        description="Forget a memory (by id) or every version of a key: it is removed with the quotes derived from it "
        "(working sets, history digests), and the freed bytes are cleared from the file; a tombstone stays. "
        "Asks first on a terminal; without one, --yes is required.",
    )
    forget.add_argument("memory", help="a memory id (mem_…) or a key (then every version of it)")
    forget.add_argument(
        "--yes", action="store_true", help="forget without asking (needed when stdin is not a terminal)"
    )
    forget.add_argument("--reason", help="why, kept in the tombstone (do not repeat the content)")
    for parser, run in ((listing, cmd_memory_list), (show, cmd_memory_show), (forget, cmd_memory_forget)):
        parser.add_argument("--json", action="store_true", help="print JSON (stable keys) instead of text")
        parser.set_defaults(run=run)
