"""`ctxkeep hook <event>` (or `ctxkeep hook claude-code <event>`): Claude Code's hooks mapped onto the client core,
on the standard library only.

- post-tool-use: records the call; a large output (see `clients.core.shaping`) goes to evidence and the model gets
  its shaped view with the ref (`updatedToolOutput` in the tool's own output shape; `updatedMCPToolOutput` too for
  MCP tools, which older versions need);
- post-tool-use-failure: records the error (an output that failed cannot be replaced);
- user-prompt-submit: records the prompt (instructions, negated ones verbatim);
- stop: the verification gate: files written this turn and not checked since block the stop once, with a reason;
- session-start: a new session (`startup`) gets the brief of where this project's work stopped; after a compaction,
  what the summary left out (read from the transcript, checked against the records); on resume, or with no summary
  visible, the records' own view (not the same view twice); nothing after `/clear`;
- pre-compact: prints what the summary must carry (Claude Code adds a PreCompact hook's stdout to the compaction's
  instructions); when the transcript changed, the detached worker ingests it (the heavy part,
  `clients.claude_code.worker`);
- post-compact: the summary Claude Code wrote is checked and kept as the task's semantic summary; its repair rides
  along (once) on the next hook that can add context (a prompt or a tool result).
Every failure exits 0 with the output unchanged and one line in the hook log (`clients.core.events.run`).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping

from ctxkeep.clients.claude_code.tool_output import output_text, replacement
from ctxkeep.clients.core import events, live
from ctxkeep.clients.core.capture import ToolEvent
from ctxkeep.clients.core.hook_io import HookInputError, Where
from ctxkeep.project import is_under, transcript_roots
from ctxkeep.storage.hook_store import HotSession
from ctxkeep.text import LazyPattern

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import IO, Any

CLIENT = "claude-code"
TASK_PREFIX = "cc-"
_SUMMARY = LazyPattern(r"<summary>(.*?)</summary>", re.DOTALL)


def _wrapper(event: str) -> int:
    """What Claude Code's answer takes of the limit around the text it adds (measured as printed)."""
    return events.printed(json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": ""}}))


def _with_pending(conn: HotSession, w: Where, event: str, shaped: dict[str, Any] | None = None) -> events.Reply:
    """The hook's answer: a repair kept from PostCompact rides along (once) as additionalContext, unless the answer
    replaces a built-in tool's output (the repair then waits for the next hook)."""
    pending = live.take_pending(conn, w) if shaped is None or "updatedToolOutput" not in shaped else ""
    output = {**(shaped or {"hookEventName": event}), **({"additionalContext": pending} if pending else {})}
    said = f"; delivered the compaction repair ({events.printed(pending):,} characters)" if pending else ""
    return ({"hookSpecificOutput": output} if len(output) > 1 else None), said


def _tool(conn: HotSession, w: Where, data: dict[str, Any], failed: bool) -> events.Reply:
    tool = str(data.get("tool_name") or "tool")
    given = data.get("tool_input")
    response = data.get("error") if failed else data.get("tool_response")
    roots = transcript_roots(w.env, w.project, data.get("cwd") if isinstance(data.get("cwd"), str) else None)
    event = ToolEvent(
        tool,
        given if isinstance(given, dict) else {},
        output_text(tool, response, roots),
        failed,
        str(data.get("tool_use_id") or ""),
        w.now(),
    )
    taken, note = events.tool(conn, w, event, TASK_PREFIX)
    shaped = replacement(tool, response, taken.view) if taken is not None and not failed else None
    if shaped is not None:
        live.note_shaped(conn)
    output, delivered = _with_pending(conn, w, "PostToolUseFailure" if failed else "PostToolUse", shaped)
    if taken is None or failed:
        return output, delivered.lstrip("; ")
    return output, note + ("" if shaped else " (kept in place)") + delivered


def post_tool_use(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    return _tool(conn, w, data, failed=False)


def post_tool_use_failure(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    return _tool(conn, w, data, failed=True)


def user_prompt_submit(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    prompt = data.get("prompt")
    recorded = f"{live.record_prompt(conn, w, prompt)} record(s)" if isinstance(prompt, str) else ""
    output, delivered = _with_pending(conn, w, "UserPromptSubmit")
    return output, recorded + delivered


def stop(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    reason = events.gate(conn, w, bool(data.get("stop_hook_active")))
    return ({"decision": "block", "reason": reason}, "blocked once: unverified changes") if reason else (None, "")


def session_start(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    if data.get("source") == "startup":
        text, note = events.start_brief(conn, w, _wrapper("SessionStart"), events.printed)
        return (
            {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}} if text else None
        ), note
    if data.get("source") == "clear":
        return None, "a cleared session asks for a fresh context: nothing injected"
    events.await_worker(conn, w)
    path, compact = data.get("transcript_path"), data.get("source") == "compact"
    summary = None
    if compact and isinstance(path, str) and os.path.isfile(path):
        from ctxkeep.clients.claude_code.transcript import last_compact_summary

        summary = last_compact_summary(path)
    text, note = events.start_context(
        conn, w, summary, TASK_PREFIX, _wrapper("SessionStart"), events.printed, after_compaction=compact
    )
    if not text:
        return None, note
    if compact and summary is None:
        live.note_compact_view(conn, w)  # PostCompact then adds only what this view cannot say
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}, note


def pre_compact(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    path = data.get("transcript_path")
    if not isinstance(path, str):
        raise HookInputError("the hook input has no transcript_path")
    cwd = data.get("cwd") if isinstance(data.get("cwd"), str) else None
    real = os.path.realpath(path)
    roots = transcript_roots(w.env, w.project, cwd)
    if not any(is_under(real, root) for root in roots):
        raise HookInputError(f"transcript {real} is outside the allowed roots ({', '.join(roots)})")
    if not os.path.isfile(real):
        raise HookInputError(f"transcript {real} is not a file")
    # Claude Code adds it to the compaction's instructions
    brief, said = events.compaction_brief(conn, w, manual=data.get("trigger") == "manual")
    stat = os.stat(real)
    state = conn.hook_state()
    if (state["transcript_size"], state["transcript_mtime_ns"]) == (stat.st_size, stat.st_mtime_ns):
        return brief or None, "; ".join(n for n in ("transcript unchanged since the last ingest", said) if n)
    return brief or None, "; ".join(n for n in (events.spawn_worker(conn, w, data, CLIENT), said) if n)


def post_compact(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    raw = data.get("compact_summary")
    if not isinstance(raw, str) or not raw.strip():
        return None, "no compact_summary in the input"
    found = _SUMMARY.search(raw)
    summary = (found.group(1) if found else raw).strip()
    findings = live.summary_losses(conn, w, summary)
    task = live.session_task(conn, w, TASK_PREFIX)
    live.keep_summary(conn, w, task, summary, findings)
    losses = live.defer_repair(conn, w, summary, events.REPAIR_CHARS, events.header(True), events.printed)
    return None, (
        f"summary kept for {task}: {len(findings)} loss(es); repair kept for the next hook that can add context "
        f"({losses})"
    )


HANDLERS: dict[str, events.Handler] = {
    "post-tool-use": post_tool_use,
    "post-tool-use-failure": post_tool_use_failure,
    "user-prompt-submit": user_prompt_submit,
    "stop": stop,
    "session-start": session_start,
    "pre-compact": pre_compact,
    "post-compact": post_compact,
}


def run(event: str, stdin: IO[bytes], stdout: IO[str], env: Mapping[str, str]) -> int:
    """One Claude Code hook event; always 0."""
    return events.run(CLIENT, HANDLERS, event, stdin, stdout, env)
