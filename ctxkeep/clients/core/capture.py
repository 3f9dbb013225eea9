"""Session records from everything the agent saw: prompts, tool calls and their results, the agent's own words.

Live hooks (a prompt submitted, a tool finished) and a transcript read at compaction produce the same records under
the same keys, so a record captured live is replaced, not repeated, when the transcript is read, and a second
compaction keeps what the first knew. A record is (kind, key) → text, status, source, ref, at; the latest write of a
key wins. Kinds:

- `prompt`: what a person typed (key: its text), `said`: the agent's latest messages;
- `rule`: a rule quoted from a spec the agent read (issue, PR, ticket, plan file), with its source and evidence ref;
- `todo` (TodoWrite list, key `list`), `task` (TaskCreate/TaskUpdate, key: task id), `plan` (ExitPlanMode);
- `edit` (key: the file), `vcs` (commit, push, clean tree), `check` (test, build, lint: passed/failed);
- `error` (key: tool and command, status open/resolved), `read` (a file read back) and `ran` (a command run):
  what verifies a write.
No record holds a secret in clear: prompts, commands, error lines and quoted rules are redacted as evidence is
(`ctxkeep.tools.redaction.redact`), before anything is cut. Standard library only (per-event hooks).
"""

from __future__ import annotations

import json
import re
import zlib

from ctxkeep.clients.core import commands
from ctxkeep.text import LazyPattern, match_key, one_line, without_bad_characters

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from ctxkeep.named_tuple import NamedTuple

MAX_TEXT = 4_000
_CUT_MARGIN = 4_096  # redacted past the cut, so a secret that straddles it is still seen whole
EDIT_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
PLAN_FILES = "/.claude/plans/"
_CREATED_ID = LazyPattern(r"#(\d+)|\btask (?:id )?(\d+)\b", re.IGNORECASE)


class Record(NamedTuple):
    kind: str
    key: str
    text: str
    at: str
    status: str = ""
    source: str = ""
    ref: str = ""


class ToolEvent(NamedTuple):
    """One finished tool call, as a hook or a transcript shows it."""

    name: str
    input: dict[str, Any]
    output: str
    is_error: bool
    use_id: str
    at: str
    ref: str = ""  # the evidence the output was offloaded to, when it was


class Known:
    """What capture needs to remember between events of one session: task ids to subjects, errors still open."""

    def __init__(self) -> None:
        self.tasks: dict[str, str] = {}
        self.open_errors: set[str] = set()


def digest(text: str) -> str:
    """A record key for a text (its matching form): two 32-bit checksums and the length, so no hashlib (OpenSSL) to load."""
    data = match_key(text).encode("utf-8")
    return f"{zlib.crc32(data):08x}{zlib.adler32(data):08x}{len(data):x}"


def unsecret(text: str) -> str:
    """`text` with every secret replaced by its marker."""
    if len(text) < 8:  # no secret is this short (the rules' own floor): a short command costs no import
        return text
    from ctxkeep.tools.redaction.redact import redact_secrets  # here: only a record's maker needs the rules

    return redact_secrets(text)[0]


def cut(text: str, limit: int) -> str:
    """At most `limit` characters of `text`, redacted first, so no part of a secret is left at the cut."""
    return unsecret(text[: limit + _CUT_MARGIN])[:limit]


def clean(text: str, limit: int = MAX_TEXT) -> str:
    """Text as a record holds it: no control characters, no secrets, at most `limit` characters."""
    return cut(without_bad_characters(text), limit).strip()


def _stored(records: list[Record]) -> list[Record]:
    """Keys and sources made from commands and output lines, redacted too."""
    return [r._replace(key=unsecret(r.key), source=unsecret(r.source)) for r in records]


def from_prompt(text: str, at: str) -> list[Record]:
    """A prompt a person typed (or queued): one record, keyed by its text."""
    body = clean(text)
    return [Record("prompt", digest(body), body, at)] if body else []


def from_assistant(text: str, at: str) -> list[Record]:
    body = clean(text, 1_500)
    return [Record("said", digest(body), body, at)] if len(body) >= 40 else []


def _todo_records(event: ToolEvent, known: Known) -> list[Record]:
    data = event.input
    if event.name == "TodoWrite" and isinstance(data.get("todos"), list):
        todos = [
            {
                "content": one_line(cut(str(t.get("content") or ""), 1_000), 300),
                "status": str(t.get("status") or "pending"),
            }
            for t in data["todos"]
            if isinstance(t, dict) and str(t.get("content") or "").strip()
        ]
        return [Record("todo", "list", json.dumps(todos, ensure_ascii=False), event.at)]
    if event.name == "TaskCreate" and (data.get("subject") or data.get("description")):
        subject = one_line(cut(str(data.get("subject") or data.get("description")), 1_000), 300)
        found = _CREATED_ID.search(event.output)
        task_id = (found.group(1) or found.group(2)) if found else str(len(known.tasks) + 1)
        known.tasks[task_id] = subject
        return [Record("task", task_id, subject, event.at, status="pending")]
    if event.name == "TaskUpdate" and data.get("status"):
        task_id = str(data.get("taskId", "")).strip()
        subject = known.tasks.get(task_id) or one_line(cut(str(data.get("subject") or ""), 1_000), 300)
        return [Record("task", task_id, subject, event.at, status=str(data["status"]))] if task_id and subject else []
    return []


def _edit_records(event: ToolEvent) -> list[Record]:
    target = event.input.get(EDIT_TOOLS.get(event.name, ""))
    if not isinstance(target, str) or event.is_error:
        return []
    if PLAN_FILES in target:  # plan mode's own file: the plan, not project work
        content = event.input.get("content")
        return [Record("plan", "plan", clean(content), event.at, source=target)] if isinstance(content, str) else []
    return [Record("edit", target, event.name, event.at)]


def _bash_records(event: ToolEvent) -> list[Record]:
    command = str(event.input.get("command") or "")
    shown = cut(command, 300)
    out = [Record("ran", event.use_id or digest(command), shown, event.at)]  # the gate: a written file was run
    kind = commands.check_kind(command)
    if kind:
        outcome = commands.check_outcome(event.output, event.is_error)
        detail = cut(commands.failure_line(event.output), 200) if outcome == "failed" else ""
        out.append(
            Record(
                "check",
                f"{kind}:{commands.command_head(unsecret(command), 4)}",
                shown,
                event.at,
                status=outcome,
                source=detail,
                ref=event.ref,
            )
        )
    action = commands.vcs_action(command)
    if action and not event.is_error:
        out.append(Record("vcs", action, shown, event.at, status="done"))
    if commands.tree_is_clean(event.output):
        out.append(Record("vcs", "clean", "working tree clean", event.at, status="done"))
    return out


def _spec_records(event: ToolEvent) -> list[Record]:
    label = commands.reads_spec(event.name, event.input)
    if not label or event.is_error:
        return []
    rules = [unsecret(rule) for rule in commands.spec_rules(event.output)]
    return [Record("rule", digest(rule), rule, event.at, source=label, ref=event.ref) for rule in rules]


def _error_key(event: ToolEvent) -> str:
    target = event.input.get("command") or event.input.get("file_path") or event.input.get("pattern") or ""
    return f"{event.name}:{commands.command_head(unsecret(str(target)), 2)}"  # redacted first: quotes go at the split


def from_tool(event: ToolEvent, known: Known) -> list[Record]:
    """The records one finished tool call makes (none for a call of no consequence)."""
    out = _todo_records(event, known) + _edit_records(event) + _spec_records(event)
    if event.name == "ExitPlanMode" and isinstance(event.input.get("plan"), str):
        out.append(Record("plan", "plan", clean(event.input["plan"]), event.at))
    if event.name == "Bash":
        out += _bash_records(event)
    if event.name == "Read" and isinstance(event.input.get("file_path"), str) and not event.is_error:
        out.append(Record("read", event.input["file_path"], "read", event.at))
    key = _error_key(event)
    if event.is_error:
        first_line = next((line.strip() for line in event.output.splitlines() if line.strip()), "error")
        out.append(Record("error", key, clean(first_line, 300), event.at, status="open", ref=event.ref))
        known.open_errors.add(key)
    elif key in known.open_errors:
        out.append(Record("error", key, "", event.at, status="resolved"))
        known.open_errors.discard(key)
    return _stored(out)
