"""What every client's transcript reader builds, whatever the client's file format: the session records (through the
same capture functions the live hooks use, under the same keys), the task the agent saved itself, the compaction
summaries in order, and the conversation as Anthropic-shaped messages for `compress_history`; plus the backward scan
that finds a file's last line holding a marker without reading the rest.

Readers are defensive: a line that is not JSON, a record of an unknown shape and a half-written last line are
skipped and counted, never a crash. Standard library only (the session-start hooks read summaries on the fast path).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence

from ctxkeep.clients.core import capture
from ctxkeep.clients.core.capture import Known, Record, ToolEvent
from ctxkeep.project import is_under
from ctxkeep.tool_names import SAVE_TOOL, SERVER_NAME

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import Any

TAIL_BYTES = 16 * 1024 * 1024
MAX_TRANSCRIPT_BYTES = 512 * 1024 * 1024


class Reading:
    """A transcript as ctxkeep reads it (see the module docstring)."""

    def __init__(self) -> None:
        self.records: list[Record] = []
        self.bound_task: str | None = None
        self.summaries: list[str] = []
        self.messages: list[dict[str, Any]] = []
        self.known = Known()
        self.lines = 0
        self.skipped = 0
        self.cwd: str | None = None
        self.state: dict[str, Any] = {}  # a resumable reader's state after its last line (JSON data), for the next read
        self.provisional: list[Record] = []  # records a later line may still change or take back

    def prompt(self, text: str, at: str) -> None:
        self.records += capture.from_prompt(text, at, self.known)
        self._message("user", [{"type": "text", "text": text}])

    def said(self, text: str, at: str) -> None:
        self.records += capture.from_assistant(text, at)
        self._message("assistant", [{"type": "text", "text": text}])

    def tool(self, event: ToolEvent, server_tool: tuple[str, str] | None = None) -> None:
        """A finished tool call: its records, the task it saved (ctxkeep's checkpoint_save), and the call and its
        result as messages."""
        self.records += capture.from_tool(event, self.known)
        if (
            server_tool == (SERVER_NAME, SAVE_TOOL)
            and isinstance(event.input.get("task_id"), str)
            and event.input["task_id"].strip()
        ):
            self.bound_task = event.input["task_id"].strip()
        self._message("assistant", [{"type": "tool_use", "id": event.use_id, "name": event.name, "input": event.input}])
        self._message(
            "user",
            [{"type": "tool_result", "tool_use_id": event.use_id, "content": event.output, "is_error": event.is_error}],
        )

    def _message(self, role: str, blocks: list[dict[str, Any]]) -> None:
        last = self.messages[-1] if self.messages else None
        if last is not None and last["role"] == role:
            last["content"] = last["content"] + blocks
        else:
            self.messages.append({"role": role, "content": blocks})

    def latest_records(self) -> list[Record]:
        """One record per (kind, key): the latest, in the order first seen."""
        return latest(self.records)


def latest(records: Iterable[Record]) -> list[Record]:
    found: dict[tuple[str, str], Record] = {}
    for record in records:
        found[(record.kind, record.key)] = record
    return list(found.values())


def json_lines(lines: Iterable[str], reading: Reading) -> Iterable[dict[str, Any]]:
    """The JSON objects among `lines` (the others counted as skipped)."""
    for line in lines:
        if not line.strip():
            continue
        reading.lines += 1
        try:
            record = json.loads(line)
        except ValueError:
            reading.skipped += 1
            continue
        if isinstance(record, dict):
            yield record
        else:
            reading.skipped += 1


def text_parts(content: Any, kinds: Sequence[str] = ("text", "input_text", "output_text", "Text")) -> str:
    """The text of a content value: a string, or the text parts of a list of blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text") or "")
            for b in content
            if isinstance(b, dict) and (b.get("type") in kinds or ("type" not in b and isinstance(b.get("text"), str)))
        )
    return ""


def tail_from_last(path: str, needle: bytes, limit: int = TAIL_BYTES) -> bytes | None:
    """The file from the start of the last line holding `needle` to its end, read backwards (a window growing ×4 up
    to `limit` bytes, so usually only the last few hundred kilobytes are read); None when the window holds none."""
    with open(path, "rb") as file:
        size = file.seek(0, 2)
        step = 256 * 1024
        while True:
            start = max(0, size - step)
            file.seek(start)
            data = file.read(size - start)
            found = data.rfind(needle)
            if found >= 0:
                begin = data.rfind(b"\n", 0, found) + 1
                if begin == 0 and start > 0 and step < limit:  # the line starts before the window
                    step *= 4
                    continue
                return data[begin:]
            if start == 0 or step >= limit:
                return None
            step *= 4


def last_line_with(path: str, needle: bytes, limit: int = TAIL_BYTES) -> str | None:
    """The last complete line of the file holding `needle`; None when the last `limit` bytes hold none."""
    tail = tail_from_last(path, needle, limit)
    return None if tail is None else tail.split(b"\n", 1)[0].decode("utf-8", "replace")


def under(path: Any, roots: Sequence[str], name_has: str = "") -> str | None:
    """The real path of a transcript named in a hook input when it is a file under one of `roots` whose name holds
    `name_has` (the session id: a hook never reads another session's file), else None."""
    if not isinstance(path, str) or not path:
        return None
    try:
        real = os.path.realpath(path)
        if not any(is_under(real, root) for root in roots) or (name_has and name_has not in os.path.basename(real)):
            return None
        return real if os.path.isfile(real) and os.stat(real).st_size <= MAX_TRANSCRIPT_BYTES else None
    except (OSError, ValueError):
        return None
