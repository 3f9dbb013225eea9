"""Codex CLI's rollout JSONL (`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<session id>.jsonl`), read defensively.

Each line is `{"timestamp", "type", "payload"}` (verified with Codex CLI 0.171). What ctxkeep reads:
- `event_msg` / `item_completed` items: `UserMessage` (what the person typed), `AgentMessage` (the agent's words),
  `CommandExecution` (command, aggregated output, exit code), `McpToolCall` (server, tool, arguments, result),
  `FileChange` / `PatchApply` (the files a patch changed);
- `compacted`: a compaction's summary (`payload.message`, after Codex's own preamble line).
Everything else (`response_item`, `turn_context`, `world_state`, token counts, …) and unknown shapes are skipped.
Tool calls become the same records, under the same keys, as the live PostToolUse hook makes (`Bash` for commands,
`mcp__<server>__<tool>` for MCP tools, `Edit` for patched files). Standard library only.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable

from ctxkeep.clients.core.capture import ToolEvent
from ctxkeep.clients.core.transcripts import Reading, json_lines, last_line_with, text_parts
from ctxkeep.text import LazyPattern

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import Any

_PREAMBLE = "Another language model started to solve this problem"
_PATCH_FILE = LazyPattern(r"^\*\*\* (Add|Update|Delete) File: (.+)$|^\*\*\* Move to: (.+)$", re.MULTILINE)


def _time(record: dict[str, Any], fallback: str) -> str:
    stamp = record.get("timestamp")
    if isinstance(stamp, str) and len(stamp) >= 20 and stamp.endswith("Z"):
        head, _, frac = stamp[:-1].partition(".")
        return f"{head}.{(frac + '000000')[:6]}Z"
    return fallback


def summary_of(message: Any) -> str | None:
    """The summary a `compacted` record carries, without Codex's preamble."""
    if not isinstance(message, str) or not message.strip():
        return None
    if message.startswith(_PREAMBLE) and "\n" in message:
        message = message.split("\n", 1)[1]
    return message.strip() or None


def command_text(command: Any) -> str:
    """A command as one line: Codex runs `[shell, "-lc", line]`; the line is what was typed."""
    if isinstance(command, str):
        return command
    if isinstance(command, list) and command and all(isinstance(part, str) for part in command):
        if len(command) >= 3 and command[-2] in ("-lc", "-c"):
            return str(command[-1])
        return " ".join(command)
    return ""


def patch_files(patch: Any) -> list[tuple[str, str]]:
    """(tool, path) of every file an apply_patch envelope adds, updates, deletes or moves to."""
    if not isinstance(patch, str):
        return []
    found = []
    for match in _PATCH_FILE.finditer(patch):
        action, path, moved = match.group(1), match.group(2), match.group(3)
        found.append(("Write" if action == "Add" else "Edit", (path or moved).strip()))
    return found


def mcp_output(result: Any) -> tuple[str, bool]:
    """An MCP result as text (the text blocks, else the structured content as JSON) and whether it is an error."""
    if not isinstance(result, dict):
        return (result if isinstance(result, str) else json.dumps(result) if result is not None else ""), False
    text = text_parts(result.get("content"))
    if not text and result.get("structuredContent") is not None:
        text = json.dumps(result["structuredContent"], ensure_ascii=False)
    return text, bool(result.get("isError"))


def _changes(item: dict[str, Any]) -> list[str]:
    changes = item.get("changes")
    if isinstance(changes, dict):
        return [str(path) for path in changes]
    if isinstance(changes, list):
        return [str(c.get("path")) for c in changes if isinstance(c, dict) and isinstance(c.get("path"), str)]
    return []


def _item(reading: Reading, item: dict[str, Any], at: str, cwd: str | None) -> None:
    kind, use_id = item.get("type"), str(item.get("id") or "")
    if kind == "UserMessage":
        reading.prompt(text_parts(item.get("content")), at)
    elif kind == "AgentMessage":
        reading.said(text_parts(item.get("content")), at)
    elif kind == "CommandExecution":
        failed = item.get("status") == "failed" or item.get("exit_code") not in (0, None)
        event = ToolEvent(
            "Bash",
            {"command": command_text(item.get("command"))},
            str(item.get("aggregated_output") or ""),
            failed,
            use_id,
            at,
        )
        reading.tool(event)
    elif kind == "McpToolCall" and isinstance(item.get("server"), str) and isinstance(item.get("tool"), str):
        output, failed = mcp_output(item.get("result"))
        raw = item.get("arguments")
        given: dict[str, Any] = raw if isinstance(raw, dict) else {}
        event = ToolEvent(
            f"mcp__{item['server']}__{item['tool']}",
            given,
            output,
            failed or item.get("status") == "failed",
            use_id,
            at,
        )
        reading.tool(event, (item["server"], item["tool"]))
    elif kind in ("FileChange", "PatchApply"):
        from ctxkeep.clients.core.events import absolute

        for n, path in enumerate(_changes(item)):
            reading.tool(
                ToolEvent(
                    "Edit",
                    {"file_path": absolute(path, cwd) or path},
                    "",
                    item.get("status") == "failed",
                    f"{use_id}:{n}",
                    at,
                )
            )


def read_rollout(lines: Iterable[str]) -> Reading:
    """The records, bound task, compaction summaries and conversation of a rollout's lines."""
    reading = Reading()
    at = "0000"
    for record in json_lines(lines, reading):
        at = _time(record, at)
        payload = record.get("payload")
        if not isinstance(payload, dict):
            reading.skipped += 1
            continue
        try:
            if record.get("type") == "session_meta" and isinstance(payload.get("cwd"), str):
                reading.cwd = payload["cwd"]
            elif record.get("type") == "compacted":
                summary = summary_of(payload.get("message"))
                if summary:
                    reading.summaries.append(summary)
            elif (
                record.get("type") == "event_msg"
                and payload.get("type") == "item_completed"
                and isinstance(payload.get("item"), dict)
            ):
                _item(reading, payload["item"], at, reading.cwd)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError):
            reading.skipped += 1  # a record of a shape this reader does not know
    return reading


def last_summary(path: str) -> str | None:
    """The summary of the rollout's last compaction, read from the file's end; None when it has none."""
    line = last_line_with(path, b'"type":"compacted"')
    if line is None:
        return None
    try:
        record = json.loads(line)
    except ValueError:
        return None
    payload = record.get("payload") if isinstance(record, dict) else None
    return summary_of(payload.get("message")) if isinstance(payload, dict) else None
