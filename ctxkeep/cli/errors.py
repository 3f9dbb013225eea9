"""Errors for people at a terminal: the library's messages name MCP tools (what an agent can call); here they name the
`ctxkeep` commands a person can type instead.

`for_people(message)` rewrites the hints of the messages the inspection commands can meet (an unknown task, ref or
memory, an ambiguous short ref) and then any remaining tool name that has a command; `describe(exc)` is the one line
and exit code `ctxkeep` prints for an error; `reporting(command)` runs a command and prints that line.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable

from pydantic import ValidationError

from ctxkeep.errors import CtxkeepError

# whole hints first (their sentence changes), then single names
_HINTS: list[tuple[str, str]] = [
    (
        r"call checkpoint_list to see the tasks here, or checkpoint_save to start this one",
        "`ctxkeep tasks` lists the tasks here (an agent starts one by saving a checkpoint)",
    ),
    (r"refs come from evidence_put or evidence_search", "`ctxkeep search WORDS` finds refs"),
    (r"the full refs are in evidence_search hits", "`ctxkeep search WORDS` shows full refs"),
    (r"\(evidence_search hits and the working set's evidence_refs show them\)", "(`ctxkeep search WORDS` shows them)"),
    (r"memory_search lists the memories and their ids", "`ctxkeep memory list` shows the memories and their ids"),
]
_COMMANDS = {
    "checkpoint_list": "`ctxkeep tasks`",
    "checkpoint_load": "`ctxkeep show`",
    "checkpoint_diff": "`ctxkeep diff`",
    "evidence_search": "`ctxkeep search`",
    "evidence_get": "`ctxkeep evidence get`",
    "memory_search": "`ctxkeep memory list`",
    "memory_forget": "`ctxkeep memory forget`",
    "build_working_set": "`ctxkeep working-set`",
}
_NAMES = re.compile(r"\b(" + "|".join(_COMMANDS) + r")\b")


def for_people(message: str) -> str:
    """`message` with its hints naming `ctxkeep` commands instead of MCP tools."""
    for pattern, replacement in _HINTS:
        message = re.sub(pattern, replacement, message)
    return _NAMES.sub(lambda found: _COMMANDS[found.group(1)], message)


def describe(exc: CtxkeepError | ValidationError) -> tuple[str, int]:
    """The line to print on stderr and the exit code: 1 for a failure the message explains, 2 for invalid input."""
    if isinstance(exc, CtxkeepError):
        return f"ctxkeep: {for_people(str(exc))}", 1
    error = exc.errors()[0]
    where = ".".join(str(part) for part in error["loc"]) or "input"
    return f"ctxkeep: invalid {where}: {error['msg']}", 2


def reporting(command: Callable[[], int]) -> int:
    """Run `command`; a ctxkeep error or invalid input becomes its one line on stderr and its exit code, Ctrl-C 130."""
    try:
        return command()
    except (CtxkeepError, ValidationError) as exc:
        line, code = describe(exc)  # the hints name ctxkeep commands, not MCP tools
        print(line, file=sys.stderr)
        return code
    except KeyboardInterrupt:
        return 130
