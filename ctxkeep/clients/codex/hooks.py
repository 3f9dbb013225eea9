"""`ctxkeep hook codex <event>`: Codex CLI's hooks mapped onto the client core, on the standard library only.

Codex sends Claude-style JSON on stdin (`session_id`, `transcript_path` = the rollout, `cwd`, `hook_event_name`;
verified with Codex CLI 0.171) and reads JSON on stdout:
- SessionStart (`source` startup | resume | compact | clear): a new session (`startup`) gets the brief of where this
  project's work stopped (`events.start_brief`, 2,000 characters); a resume the records' view; after a compaction the
  repair of the summary Codex wrote (read from the rollout's last `compacted` record, checked against the records,
  kept as the task's summary); nothing after `clear`, which asks for a fresh context. All as
  `hookSpecificOutput.additionalContext`: Codex puts it in a developer message. Past 2,500 tokens Codex spills it to
  a file unless the handler sets `additionalContextLimit` (install sets 4,000 tokens; the view stays within 9,000
  characters);
- UserPromptSubmit: records the prompt;
- PostToolUse: records the call (`Bash` commands, MCP tools, `apply_patch` edits); a large output is offloaded to
  evidence, but stays in the context: Codex ignores `updatedMCPToolOutput` and `updatedToolOutput` (openai/codex#38135);
- Stop: the verification gate (`{"decision": "block", "reason": …}`; Codex runs one more turn with the reason);
- PreCompact: the detached worker reads the rollout into records, binds the task, saves a checkpoint and compresses
  the history (`ctxkeep hook codex worker`); SessionStart(compact) waits for it. It prints nothing: Codex 0.171
  hands no PreCompact output to its summarizer (plain text is not read; a JSON `systemMessage` is only shown to
  the user as a warning; tests/e2e/test_briefs.py), so the compaction brief has nowhere to go.
PostCompact carries no summary, so it is not used. Every failure exits 0 with nothing printed and one log line.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from ctxkeep.clients.core import events
from ctxkeep.clients.core.capture import ToolEvent
from ctxkeep.clients.core.hook_io import HookInputError, Where
from ctxkeep.clients.core.transcripts import under
from ctxkeep.storage.hook_store import HotSession

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import IO, Any

CLIENT = "codex"
TASK_PREFIX = "codex-"
CONTEXT_LIMIT_TOKENS = 4_000  # the handler's additionalContextLimit: the 9,000-character view never spills


def codex_home(env: Mapping[str, str]) -> str:
    """Codex's folder: CODEX_HOME, else ~/.codex."""
    if env.get("CODEX_HOME"):
        return os.path.expanduser(env["CODEX_HOME"])
    return os.path.join(env.get("HOME") or os.path.expanduser("~"), ".codex")


def rollout(w: Where, data: Mapping[str, Any]) -> str | None:
    """The session's own rollout (under $CODEX_HOME/sessions, named after the session id), or None."""
    roots = [os.path.realpath(os.path.join(codex_home(w.env), "sessions"))]
    return under(data.get("transcript_path"), roots, w.session_id)


def tool_events(data: Mapping[str, Any], w: Where) -> list[ToolEvent]:
    """PostToolUse's input as the core's tool calls: `Bash` (tool_response is the output text), MCP tools
    (`mcp__<server>__<tool>`, tool_response the MCP result), apply_patch (an `Edit` or `Write` of each file)."""
    from ctxkeep.clients.codex.rollout import mcp_output, patch_files

    name = str(data.get("tool_name") or "tool")
    raw = data.get("tool_input")
    given: dict[str, Any] = raw if isinstance(raw, dict) else {}
    response = data.get("tool_response")
    use_id = str(data.get("tool_use_id") or "")
    if name.startswith("mcp__"):
        output, failed = mcp_output(response)
        return [ToolEvent(name, given, output, failed, use_id, w.now())]
    if name == "apply_patch":
        files = patch_files(given.get("command") or given.get("input") or given.get("patch"))
        return [
            ToolEvent(
                tool,
                {"file_path": events.absolute(path, data.get("cwd")) or path},
                _text(response),
                False,
                use_id if n == 0 else f"{use_id}:{n}",
                w.now(),
            )
            for n, (tool, path) in enumerate(files)
        ]
    return [ToolEvent(name, dict(given), _text(response), False, use_id, w.now())]


def _text(response: Any) -> str:
    if isinstance(response, str):
        return response
    return json.dumps(response, ensure_ascii=False) if response is not None else ""


def post_tool_use(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    notes = [events.tool(conn, w, event, TASK_PREFIX)[1] for event in tool_events(data, w)]
    note = "; ".join(n for n in notes if n)
    return None, note + (" (kept in the context: Codex cannot replace a tool output)" if note else "")


def user_prompt_submit(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    return None, events.prompt(conn, w, data.get("prompt"))


def stop(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    reason = events.gate(conn, w, bool(data.get("stop_hook_active")))
    return ({"decision": "block", "reason": reason}, "blocked once: unverified changes") if reason else (None, "")


def _context(text: str) -> dict[str, Any] | None:
    """SessionStart's answer: `text` as additionalContext (Codex puts it in a developer message); None without text."""
    return {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}} if text else None


def session_start(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    wrapper = events.printed(
        json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ""}})
    )
    if data.get("source") == "startup":
        text, note = events.start_brief(conn, w, wrapper, events.printed)
        return _context(text), note
    if data.get("source") == "clear":
        return None, "the user cleared the context: nothing injected"
    summary = None
    if data.get("source") == "compact":
        events.await_worker(conn, w)
        path = rollout(w, data)
        if path is not None:
            from ctxkeep.clients.codex.rollout import last_summary

            summary = last_summary(path)
    text, note = events.start_context(conn, w, summary, TASK_PREFIX, wrapper, events.printed)
    return _context(text), note


def pre_compact(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    path = rollout(w, data)
    if path is None:
        raise HookInputError("the hook input names no rollout of this session under $CODEX_HOME/sessions")
    stat = os.stat(path)
    state = conn.hook_state()
    if (state["transcript_size"], state["transcript_mtime_ns"]) == (stat.st_size, stat.st_mtime_ns):
        return None, "rollout unchanged since the last ingest"
    return None, events.spawn_worker(conn, w, {**data, "transcript_path": path}, CLIENT)


HANDLERS: dict[str, events.Handler] = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt_submit,
    "PostToolUse": post_tool_use,
    "Stop": stop,
    "PreCompact": pre_compact,
}


def run(event: str, stdin: IO[bytes], stdout: IO[str], env: Mapping[str, str]) -> int:
    """One Codex hook event; always 0 (`ctxkeep hook codex worker` runs `worker.py`)."""
    return events.run(CLIENT, HANDLERS, event, stdin, stdout, env)
