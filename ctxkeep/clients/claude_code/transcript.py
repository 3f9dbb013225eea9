"""Claude Code's transcript JSONL, read defensively into session records and compaction summaries.

A line that is not a JSON object, a sidechain record (a subagent's), a record of a shape this reader does not know, and
a half-written last line are skipped. Prompts are what a person typed or queued (machine text such as tool results,
`<system-reminder>` blocks, built-in commands that ran locally and compaction summaries is not); a command that expands
to a prompt counts. Tool calls are paired with their results by id. Standard library only (per-event hooks).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timezone

from ctxkeep.clients.core import capture
from ctxkeep.clients.core.capture import Record, ToolEvent
from ctxkeep.clients.core.transcripts import TAIL_BYTES, Reading, latest, tail_from_last
from ctxkeep.tool_names import SAVE_TOOL
from ctxkeep.text import LazyPattern

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import Any

_NOT_A_PROMPT = (
    "[Request interrupted",
    "<task-notification>",
    "<teammate-message",  # an agent team's member reporting: not the person's words
    "This session is being continued",
    "<local-command-",
    "Caveat:",
    "<system-reminder>",
    "<bash-",
    "<user-prompt-submit-hook>",
)
_COMMAND = LazyPattern(r"<command-name>(.*?)</command-name>", re.DOTALL)
_COMMAND_ARGS = LazyPattern(r"<command-args>(.*?)</command-args>", re.DOTALL)
_SAVE_TOOL = LazyPattern(rf"^mcp__.+__{SAVE_TOOL}$")  # the agent may have named the server otherwise
_SUMMARY = LazyPattern(r"<summary>(.*?)</summary>", re.DOTALL)
PlanReader = Callable[[str], "str | None"]


class Transcript(Reading):
    """What a Claude Code transcript holds for ctxkeep (a client's Reading): its records, the task the agent saved
    itself, compaction summaries in order, and how many compactions it shows. Its messages stay empty:
    compress_history reads the transcript file itself. Read from a saved `state` (`read_transcript`), it holds what
    the lines after that state add; its `provisional` records: tool calls without their result yet (recorded with
    an empty output, as at the end of any read) and a slash command not yet known to have run locally."""


def normal_time(stamp: Any, fallback: str) -> str:
    """A transcript timestamp in ctxkeep's fixed-width UTC form (so records order by text), else `fallback`."""
    if not isinstance(stamp, str):
        return fallback
    try:
        moment = datetime.fromisoformat(stamp.replace("Z", "+00:00")).astimezone(timezone.utc)
    except ValueError:
        return fallback
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}Z"


def text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text") or "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _output_of(block: dict[str, Any]) -> str:
    content = block.get("content")
    return content if isinstance(content, str) else text_of(content)


def prompt_text(content: Any) -> str | None:
    """The text a person typed (or the command they ran), or None for tool results and machine text."""
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None
    text = text_of(content).strip()
    if not text or text.startswith(_NOT_A_PROMPT):
        return None
    command = _COMMAND.search(text)
    if command:
        args = _COMMAND_ARGS.search(text)
        return f"{command.group(1).strip()} {args.group(1).strip() if args else ''}".strip()
    return text


class _Reader:
    def __init__(self, read_plan: PlanReader) -> None:
        self.out = Transcript()
        self.known = self.out.known
        self.calls: dict[str, tuple[str, dict[str, Any]]] = {}
        self.read_plan = read_plan
        self.last_command: int | None = None  # index in records of a slash command, until we know it ran locally
        self.at = "0000"
        self.branch = ""

    def state(self) -> dict[str, Any]:
        """What the next read needs to go on where this one stopped (JSON data): the calls waiting for their result,
        what capture knows, the held slash command, the clock, the branch and the task the agent saved."""
        known = self.known
        held = self.out.records[self.last_command] if self.last_command is not None else None
        return {
            "calls": self.calls,
            "tasks": known.tasks,
            "open_errors": dict(sorted(known.open_errors.items())),
            "env": known.env,
            "prompt_files": sorted(known.prompt_files),
            "held": list(held) if held is not None else None,
            "at": self.at,
            "branch": self.branch,
            "bound_task": self.out.bound_task,
        }

    def resume(self, state: Mapping[str, Any]) -> None:
        """Go on from a `state` an earlier read saved; the held slash command is this read's first record again."""
        known = self.known
        self.calls = {str(k): (str(v[0]), dict(v[1])) for k, v in state["calls"].items()}
        known.tasks = {str(k): str(v) for k, v in state["tasks"].items()}
        errors = state["open_errors"]  # a list of keys in states saved before errors kept their line
        known.open_errors = (
            {str(k): str(v) for k, v in errors.items()} if isinstance(errors, dict) else dict.fromkeys(errors, "")
        )
        known.env = {str(k): (str(v[0]), str(v[1])) for k, v in state["env"].items()}
        known.prompt_files = set(state["prompt_files"])
        if state["held"] is not None:
            self.out.records.append(Record(*state["held"]))
            self.last_command = 0
        self.at, self.branch = str(state["at"]), str(state["branch"])
        self.out.bound_task = state["bound_task"]

    def record(self, record: dict[str, Any]) -> None:
        self.at = normal_time(record.get("timestamp"), self.at)
        kind = record.get("type")
        branch = record.get("gitBranch")
        if isinstance(branch, str) and branch and branch != self.branch:
            self.branch = branch
            self.out.records.append(Record("fact", "branch", capture.clean(branch, 200), self.at, source="git"))
        if kind == "system" and record.get("subtype") == "local_command":
            self._drop_command()
        elif (
            kind == "queue-operation"
            and record.get("operation") == "enqueue"
            and isinstance(record.get("content"), str)
        ):
            self.out.records += capture.from_prompt(record["content"], self.at, self.known)
        elif kind == "attachment" and isinstance(record.get("attachment"), dict):
            self.out.records += capture.from_attachment(record["attachment"], self.at)
        message = record.get("message")
        if kind in ("user", "assistant") and isinstance(message, dict):
            self._message(record, message.get("content"))

    def _drop_command(self) -> None:
        if self.last_command is not None:
            del self.out.records[self.last_command]  # a built-in command (/clear, /model …) that ran locally
            self.last_command = None

    def _message(self, record: dict[str, Any], content: Any) -> None:
        if record.get("isCompactSummary"):
            text = text_of(content)
            found = _SUMMARY.search(text)
            self.out.summaries.append((found.group(1) if found else text).strip())
            return
        if record["type"] == "user" and record.get("isMeta"):
            self.out.records += capture.from_hook_feedback(text_of(content), self.at)  # a Stop hook's, when it is one
        elif record["type"] == "user":
            if text_of(content).lstrip().startswith("<local-command-"):
                self._drop_command()
            else:
                self._prompt(content)
        if record["type"] == "assistant":
            self.out.records += capture.from_assistant(text_of(content), self.at)
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                self._tool_use(block)
            elif isinstance(block, dict) and block.get("type") == "tool_result":
                self.tool_result(block, record.get("toolUseResult"))

    def _prompt(self, content: Any) -> None:
        prompt = prompt_text(content)
        if prompt:
            found = capture.from_prompt(prompt, self.at, self.known)  # none for a built-in command (/model …)
            self.last_command = len(self.out.records) if found and _COMMAND.search(text_of(content)) else None
            self.out.records += found

    def _tool_use(self, block: dict[str, Any]) -> None:
        name, given = str(block.get("name", "")), block.get("input")
        data: dict[str, Any] = given if isinstance(given, dict) else {}
        self.calls[str(block.get("id"))] = (name, data)
        if _SAVE_TOOL.match(name) and isinstance(data.get("task_id"), str) and data["task_id"].strip():
            self.out.bound_task = data["task_id"].strip()

    def tool_result(self, block: dict[str, Any], result: Any) -> None:
        use_id = str(block.get("tool_use_id"))
        name, data = self.calls.pop(use_id, ("tool", {}))
        if name == "ExitPlanMode" and isinstance(result, dict) and "plan" not in data:
            plan = (
                result.get("plan")
                if isinstance(result.get("plan"), str)
                else self.read_plan(str(result.get("filePath")))
            )
            data = {**data, "plan": plan} if plan else data
        event = ToolEvent(name, data, _output_of(block), bool(block.get("is_error")), use_id, self.at)
        self.out.records += capture.from_tool(event, self.known)


def read_transcript(
    lines: Iterable[str], read_plan: PlanReader = lambda path: None, state: Mapping[str, Any] | None = None
) -> Transcript:
    """The records, bound task and compaction summaries of a transcript's lines; with the `state` a read of the lines
    before them left (`Transcript.state`), what these lines add (the same records a read of all the lines gives)."""
    reader = _Reader(read_plan)
    if state is not None:
        reader.resume(state)
    for line in lines:
        reader.out.lines += 1
        try:
            record = json.loads(line)
        except ValueError:
            reader.out.skipped += 1
            continue
        if not isinstance(record, dict) or record.get("isSidechain"):
            reader.out.skipped += 1
            continue
        try:
            reader.record(record)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError):
            reader.out.skipped += 1  # a record of a shape this reader does not know
    reader.out.state = json.loads(json.dumps(reader.state()))  # a copy: the end of this read must not change it
    if reader.last_command is not None:
        reader.out.provisional.append(reader.out.records[reader.last_command])
    flushed = len(reader.out.records)
    for use_id in list(reader.calls):  # calls whose result is not written yet (the session stopped, or it is running)
        reader.tool_result({"tool_use_id": use_id, "content": ""}, None)
    reader.out.provisional += reader.out.records[flushed:]
    return reader.out


_BOUNDARY = b'"compact_boundary"'


def _after_last_boundary(path: str, limit: int) -> list[str] | None:
    """The lines after the transcript's last compact_boundary record (the summary is written right after it); None
    without one in the last `limit` bytes."""
    tail = tail_from_last(path, _BOUNDARY, limit)
    return None if tail is None else tail.decode("utf-8", "replace").splitlines()[1:]


def last_compact_summary(path: str, tail_bytes: int = TAIL_BYTES) -> str | None:
    """The summary of the transcript's last compaction (the `isCompactSummary` record after the last
    `compact_boundary`), read from the file's tail without parsing the rest; None when there is none."""
    lines = _after_last_boundary(path, tail_bytes)
    for line in lines or []:
        if '"isCompactSummary"' not in line:
            continue
        found = _summary_of(line)
        if found:
            return found
    return None


def _summary_of(line: str) -> str | None:
    """The compaction summary one transcript line holds, as the reader reads it (without making its records)."""
    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict) or record.get("isSidechain") or record.get("type") not in ("user", "assistant"):
        return None
    message = record.get("message")
    if not isinstance(message, dict) or not record.get("isCompactSummary"):
        return None
    text = text_of(message.get("content"))
    found = _SUMMARY.search(text)
    return (found.group(1) if found else text).strip()


__all__ = ["Transcript", "last_compact_summary", "latest", "normal_time", "prompt_text", "read_transcript", "text_of"]
