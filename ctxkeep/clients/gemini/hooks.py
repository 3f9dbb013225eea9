"""`ctxkeep hook gemini <event>`: Gemini CLI's hooks mapped onto the client core, on the standard library only.

Gemini sends `session_id`, `transcript_path` (the chat JSONL), `cwd`, `hook_event_name`, `timestamp` and reads pure
JSON on stdout (verified with Gemini CLI 0.61; geminicli.com/docs/hooks/reference):
- SessionStart (`source` startup | resume; nothing after `clear`, which asks for a fresh context): a new session
  (`startup`) gets the brief of where this project's work stopped (`events.start_brief`, 2,000 characters), a resume
  the records' view, as `hookSpecificOutput.additionalContext`, which Gemini puts before the first prompt in
  `<hook_context>` with `<` and `>` HTML-escaped (`&` and quotes as they are), so ctxkeep's text for Gemini has
  neither (`unescaped`: the quote marker `›`, arrows `→`, other angle brackets `‹ ›`);
- BeforeAgent: records the prompt (without the `<hook_context>` Gemini prefixed to it);
- AfterTool: records the call; a large output is offloaded to evidence but stays in the context (Gemini 0.61 ignores
  the documented `tool_output` replacement);
- BeforeAgent and AfterTool also look for a compression Gemini did since (a new `<state_snapshot>` in the chat file,
  read from where the last look stopped): Gemini fires no hook after compressing, so the repair of that summary
  rides on the next of these two, once, as additionalContext;
- AfterAgent: the verification gate (`{"decision": "deny", "reason": …}`: Gemini runs one more turn with the reason);
- SessionEnd: the detached worker reads the chat file into records, binds and saves the task, compresses the history.
PreCompress is not used: it fires before every compression check (each model call) and carries no summary, and
Gemini 0.61 drops its output (`ChatCompressionService.compress` awaits the hooks and ignores their result; a
`systemMessage` only reaches the debug log), so the compaction brief has nowhere to go (tests/e2e/test_briefs.py).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from ctxkeep.clients.core import events
from ctxkeep.clients.core.capture import digest
from ctxkeep.clients.core.hook_io import Where
from ctxkeep.clients.core.transcripts import under
from ctxkeep.clients.gemini.tools import mcp_of, output_text, tool_event, without_hook_context
from ctxkeep.storage.hook_store import HotSession

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import IO, Any

CLIENT = "gemini"
TASK_PREFIX = "gemini-"
_OPEN, _CLOSE = b"<state_snapshot>", b"</state_snapshot>"


def gemini_home(env: Mapping[str, str]) -> str:
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".gemini")


def chat_file(w: Where, data: Mapping[str, Any]) -> str | None:
    """The session's own chat file (under ~/.gemini/tmp, named with the session id's first 8 characters), or None."""
    roots = [os.path.realpath(os.path.join(gemini_home(w.env), "tmp"))]
    return under(data.get("transcript_path"), roots, w.session_id[:8])


_ANGLES = str.maketrans({"<": "\u2039", ">": "\u203a"})


def unescaped(text: str) -> str:
    """`text` as ctxkeep gives it to Gemini: with nothing Gemini HTML-escapes inside <hook_context> (`<` and `>`
    would reach the model as `&lt;` and `&gt;`): arrows as arrows (→ ←), the quote marker and every other angle
    bracket as a single guillemet (› ‹), which Gemini passes as they are."""
    return text.replace("->", "\u2192").replace("<-", "\u2190").translate(_ANGLES)


def _shown(text: str) -> int:
    return events.printed(unescaped(text))


def new_snapshot(conn: HotSession, w: Where, data: Mapping[str, Any]) -> str | None:
    """The summary of a compression written to the chat file since the last look (each look reads only what was
    appended since, from the session's hook state), or None; a summary already repaired is not returned again."""
    path = chat_file(w, data)
    if path is None:
        return None
    seen = conn.hook_state()["transcript_size"]
    start = max(0, int(seen) - len(_OPEN)) if isinstance(seen, int) else 0
    with open(path, "rb") as file:
        size = file.seek(0, 2)
        if size <= start:
            return None
        file.seek(start)
        chunk = file.read(size - start)
    begin = chunk.rfind(_OPEN)
    end = chunk.find(_CLOSE, begin) if begin >= 0 else -1
    if begin >= 0 and end < 0:  # the snapshot is still being written: look again from its start next time
        conn.set_hook_state(transcript_size=start + begin)
        return None
    conn.set_hook_state(transcript_size=size)
    if begin < 0:
        return None
    raw = chunk[begin + len(_OPEN) : end].decode("utf-8", "replace")
    try:
        summary = str(json.loads(f'"{raw}"'))  # it sits inside a JSON string
    except ValueError:
        summary = raw
    return summary.strip() if summary.strip() and events.mark(conn, w, "gemini-snapshot", digest(summary)) else None


def _with_repair(conn: HotSession, w: Where, data: Mapping[str, Any], event: str, note: str) -> events.Reply:
    """The hook's answer: the repair of a compression seen since the last look, if any, as additionalContext."""
    summary = new_snapshot(conn, w, data)
    if summary is None:
        return None, note
    events.await_worker(conn, w)
    text, said = events.start_context(conn, w, summary, TASK_PREFIX, 0, _shown)
    if not text:
        return None, "; ".join(n for n in (note, said) if n)
    return {"hookSpecificOutput": {"hookEventName": event, "additionalContext": unescaped(text)}}, "; ".join(
        n for n in (note, said) if n
    )


def session_start(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    if data.get("source") == "clear":
        return None, "the user cleared the context: nothing injected"
    wrapper = _shown(json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ""}}))
    if data.get("source") == "startup":
        text, note = events.start_brief(conn, w, wrapper, _shown)
    else:
        text, note = events.start_context(conn, w, None, TASK_PREFIX, wrapper, _shown)
    if not text:
        return None, note
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": unescaped(text)}}, note


def before_agent(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    prompt = data.get("prompt")
    note = events.prompt(conn, w, without_hook_context(prompt) if isinstance(prompt, str) else None)
    return _with_repair(conn, w, data, "BeforeAgent", note)


def after_tool(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    response = data.get("tool_response")
    name = str(data.get("tool_name") or "tool")
    shown = response.get("returnDisplay") if isinstance(response, dict) else None
    event = tool_event(
        name,
        data.get("tool_input"),
        output_text(response),
        bool(isinstance(response, dict) and response.get("error")),
        str(data.get("tool_use_id") or f"{name}:{w.now()}"),
        w.now(),
        data.get("cwd"),
        mcp_of(name, data.get("mcp_context")),
        shown.get("filePath") if isinstance(shown, dict) else None,
    )
    _, note = events.tool(conn, w, event, TASK_PREFIX)
    return _with_repair(
        conn,
        w,
        data,
        "AfterTool",
        note + (" (kept in the context: Gemini cannot replace a tool output)" if note else ""),
    )


def after_agent(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    reason = events.gate(conn, w, bool(data.get("stop_hook_active")))
    return ({"decision": "deny", "reason": reason}, "blocked once: unverified changes") if reason else (None, "")


def session_end(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    path = chat_file(w, data)
    if path is None:
        return None, "no chat file of this session under ~/.gemini/tmp: nothing to ingest"
    return None, events.spawn_worker(conn, w, {**data, "transcript_path": path}, CLIENT)


HANDLERS: dict[str, events.Handler] = {
    "SessionStart": session_start,
    "BeforeAgent": before_agent,
    "AfterTool": after_tool,
    "AfterAgent": after_agent,
    "SessionEnd": session_end,
}


def run(event: str, stdin: IO[bytes], stdout: IO[str], env: Mapping[str, str]) -> int:
    """One Gemini CLI hook event; always 0 (`ctxkeep hook gemini worker` runs `worker.py`)."""
    return events.run(CLIENT, HANDLERS, event, stdin, stdout, env)


__all__ = ["CLIENT", "HANDLERS", "TASK_PREFIX", "chat_file", "run"]
