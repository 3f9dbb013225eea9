"""`ctxkeep hook vscode <event>`: VS Code's agent hooks (Copilot agent mode) mapped onto the client core, on the
standard library only.

Common input: `sessionId` (some builds send `session_id`), `hookEventName`, `cwd`, `transcript_path`, `timestamp`;
output JSON on stdout (code.visualstudio.com/docs/copilot/customization/hooks, hooks reference):
- SessionStart: the records' view as `hookSpecificOutput.additionalContext` (VS Code fires it at a session's first
  prompt, `source` always "new": a session it resumes under the same id gets its records back);
- UserPromptSubmit (`prompt`): records it (this event takes no additionalContext);
- PostToolUse (`tool_name`, `tool_input`, `tool_response`): the records of each call, VS Code's tool names mapped to
  the core's (`run_in_terminal` → Bash, `read_file` → Read, `create_file`, `replace_string_in_file`, … → Edit; Claude
  Code's names, which VS Code also uses, pass through); a large output is offloaded but stays in the context;
- Stop: the verification gate, `hookSpecificOutput {hookEventName: "Stop", decision: "block", reason}`.
PreCompact shows no summary and takes no context, so it is not used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ctxkeep.clients.core import events
from ctxkeep.clients.core.capture import ToolEvent
from ctxkeep.clients.core.hook_io import Where
from ctxkeep.storage.hook_store import HotSession

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import IO, Any

CLIENT = "vscode"
TASK_PREFIX = "vscode-"
SESSION_KEYS = ("sessionId", "session_id")
_PATH = {"filePath": "file_path", "path": "file_path"}
TOOLS: events.ToolMap = {
    "run_in_terminal": ("Bash", {}),
    "runInTerminal": ("Bash", {}),
    "runCommands": ("Bash", {}),
    "read_file": ("Read", _PATH),
    "readFile": ("Read", _PATH),
    "create_file": ("Write", _PATH),
    "createFile": ("Write", _PATH),
    "replace_string_in_file": ("Edit", _PATH),
    "multi_replace_string_in_file": ("Edit", _PATH),
    "insert_edit_into_file": ("Edit", _PATH),
    "edit_file": ("Edit", _PATH),
    "editFile": ("Edit", _PATH),
    "grep_search": ("Grep", {"query": "pattern"}),
    "file_search": ("Glob", {"query": "pattern"}),
    "list_dir": ("LS", _PATH),
    "fetch_webpage": ("WebFetch", {}),
}


def _text(response: Any) -> str:
    if isinstance(response, str):
        return response
    if isinstance(response, dict) and isinstance(response.get("content"), list):
        return "\n".join(str(p.get("text") or p.get("value") or "") for p in response["content"] if isinstance(p, dict))
    return json.dumps(response, ensure_ascii=False) if response is not None else ""


def tool_events(data: Mapping[str, Any], w: Where) -> list[ToolEvent]:
    """A PostToolUse input as the core's tool calls (one per file for `editFiles {files}`)."""
    name, given = events.canonical(str(data.get("tool_name") or "tool"), data.get("tool_input"), TOOLS, data.get("cwd"))
    output, use_id = _text(data.get("tool_response")), str(data.get("tool_use_id") or "")
    if name == "editFiles" and isinstance(given.get("files"), list):
        return [
            ToolEvent(
                "Edit", {"file_path": events.absolute(f, data.get("cwd")) or f}, output, False, f"{use_id}:{n}", w.now()
            )
            for n, f in enumerate(given["files"])
            if isinstance(f, str)
        ]
    return [ToolEvent(name, given, output, False, use_id, w.now())]


def session_start(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    wrapper = events.printed(
        json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": ""}})
    )
    text, note = events.start_context(conn, w, None, TASK_PREFIX, wrapper, events.printed)
    return (
        {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}} if text else None
    ), note


def user_prompt_submit(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    return None, events.prompt(conn, w, data.get("prompt"))


def post_tool_use(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    return None, "; ".join(n for n in (events.tool(conn, w, e, TASK_PREFIX)[1] for e in tool_events(data, w)) if n)


def stop(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    reason = events.gate(conn, w, bool(data.get("stop_hook_active")))
    if not reason:
        return None, ""
    return {
        "hookSpecificOutput": {"hookEventName": "Stop", "decision": "block", "reason": reason}
    }, "blocked once: unverified changes"


HANDLERS: dict[str, events.Handler] = {
    "SessionStart": session_start,
    "UserPromptSubmit": user_prompt_submit,
    "PostToolUse": post_tool_use,
    "Stop": stop,
}


def run(event: str, stdin: IO[bytes], stdout: IO[str], env: Mapping[str, str]) -> int:
    """One VS Code hook event; always 0."""
    return events.run(CLIENT, HANDLERS, event, stdin, stdout, env, SESSION_KEYS)
