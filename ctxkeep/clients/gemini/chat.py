"""Gemini CLI's chat file (`~/.gemini/tmp/<project>/chats/session-<time>-<id8>.jsonl`), read defensively.

Verified with Gemini CLI 0.61: line 1 is the session's metadata; then message records `{id, timestamp, type:
"user" | "gemini" | …, content, displayContent?, toolCalls?: [{id, name, args, result, status}]}`, where the same id can
repeat (the last line wins); `{"$set": {"messages": […]}}` rewrites the history (a compression, a resume) and
`{"$set": {…}}` other fields. A compression leaves its summary as a user message `<state_snapshot>…</state_snapshot>`
(and the model's "Got it." acknowledgement). Every message ever written counts for the records (a compression drops
them from the history, not from what happened); summaries are collected in order. Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from ctxkeep.clients.core.transcripts import Reading, json_lines, text_parts
from ctxkeep.clients.gemini.tools import output_text, tool_event, without_hook_context
from ctxkeep.tool_names import SERVER_NAME
from ctxkeep.text import LazyPattern

_SNAPSHOT = LazyPattern(r"<state_snapshot>(.*?)</state_snapshot>", re.DOTALL)
_MACHINE = ("<session_context>", "<state_snapshot>")


def _time(stamp: Any, fallback: str) -> str:
    if isinstance(stamp, str) and len(stamp) >= 20 and stamp.endswith("Z"):
        head, _, frac = stamp[:-1].partition(".")
        return f"{head}.{(frac + '000000')[:6]}Z"
    return fallback


def _server_tool(name: str) -> tuple[str, str] | None:
    """(server, tool) of `mcp_<server>_<tool>` (ctxkeep's own name known; else the server ends at the next `_`)."""
    own = f"mcp_{SERVER_NAME}_"
    if name.startswith(own):
        return SERVER_NAME, name[len(own) :]
    if name.startswith("mcp_") and "_" in name[4:]:
        server, _, tool = name[4:].partition("_")
        return server, tool
    return None


def _result_text(result: Any) -> tuple[str, bool]:
    """A tool call's result as the model read it, and whether it was an error."""
    texts, failed = [], False
    for part in result if isinstance(result, list) else []:
        response = part.get("functionResponse", {}).get("response") if isinstance(part, dict) else None
        if isinstance(response, dict):
            failed = failed or "error" in response
            texts.append(output_text(response.get("output", response.get("error", ""))))
    return "\n".join(texts), failed


def _message(reading: Reading, message: dict[str, Any], cwd: str | None, at: str) -> None:
    kind = message.get("type")
    if kind == "user":
        content = message.get("displayContent") or message.get("content")
        text = text_parts(content)
        snapshot = _SNAPSHOT.search(text)
        if snapshot:
            reading.summaries.append(snapshot.group(1).strip())
        elif text and not text.lstrip().startswith(_MACHINE):
            prompt = without_hook_context(text)
            if prompt:
                reading.prompt(prompt, at)
    elif kind == "gemini":
        text = text_parts(message.get("content"))
        if text and not text.startswith("Got it. Thanks for the additional context"):
            reading.said(text, at)
        for call in message.get("toolCalls") or []:
            if isinstance(call, dict) and isinstance(call.get("name"), str):
                output, failed = _result_text(call.get("result"))
                failed = failed or call.get("status") not in (None, "success")
                reading.tool(
                    tool_event(
                        call["name"],
                        call.get("args"),
                        output,
                        failed,
                        str(call.get("id") or ""),
                        _time(call.get("timestamp"), at),
                        cwd,
                        _server_tool(call["name"]),
                    ),
                    _server_tool(call["name"]),
                )


def _unique(messages: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each message once: a compression rewrites the turns it keeps under new ids (same text, same tool calls)."""
    seen: set[str] = set()
    out = []
    for message in messages:
        calls = [str(c.get("id")) for c in message.get("toolCalls") or [] if isinstance(c, dict)]
        text = without_hook_context(text_parts(message.get("displayContent") or message.get("content")))
        key = repr((message.get("type"), text, calls))
        if key not in seen:
            seen.add(key)
            out.append(message)
    return out


def read_chat(lines: Iterable[str], cwd: str | None = None) -> Reading:
    """The records, bound task, compression summaries and conversation of a chat file's lines: each message once
    (its last version as written), in time order, including the ones a compression rewrote away; of a rewrite (which
    re-lists the history in the API's form, ids reused) only the messages never written on their own count."""
    reading = Reading()
    written: dict[str, dict[str, Any]] = {}  # message records as written, by id (the last version wins)
    rewritten: dict[str, dict[str, Any]] = {}  # messages only a history rewrite holds (a compression's summary, …)
    for record in json_lines(lines, reading):
        patch = record.get("$set")
        if isinstance(patch, dict) and isinstance(patch.get("messages"), list):
            for message in patch["messages"]:
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    rewritten.setdefault(message["id"], message)
        elif isinstance(record.get("id"), str) and "type" in record:
            written[record["id"]] = record
    messages = {**{k: v for k, v in rewritten.items() if k not in written}, **written}
    order = sorted(messages.values(), key=lambda m: str(m.get("timestamp") or ""))
    at = "0000"
    for message in _unique(order):
        at = _time(message.get("timestamp"), at)
        try:
            _message(reading, message, cwd, at)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError):
            reading.skipped += 1  # a message of a shape this reader does not know
    reading.summaries = list(dict.fromkeys(reading.summaries))
    return reading
