"""`ctxkeep hook cursor <event>`: Cursor's agent hooks mapped onto the client core, on the standard library only.

Every event carries `conversation_id`, `generation_id`, `hook_event_name` and `workspace_roots`
(cursor.com/docs/agent/hooks; field shapes as documented there and by its integrations):
- sessionStart: the records' view as `additional_context` (a resumed conversation; a new one has no records);
- beforeSubmitPrompt (`prompt`): records it; answers `{"continue": true}`;
- afterShellExecution (`command`, `output`), afterMCPExecution (`tool_name`, `tool_input` as JSON text, `result_json`),
  afterFileEdit (`file_path`, `edits`): the records of each call; a large output is offloaded to evidence, but stays in
  the context (these hooks cannot change what the agent saw);
- stop (`status`, `loop_count`): the verification gate, as `followup_message` (Cursor sends it as the next user
  message; `loop_count` > 0 is a stop after such a follow-up, never blocked again).
preCompact is observe-only and shows no summary, so it is not used.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ctxkeep.clients.core import events
from ctxkeep.clients.core.capture import ToolEvent, digest
from ctxkeep.clients.core.hook_io import Where
from ctxkeep.storage.hook_store import HotSession
from ctxkeep.tool_names import SERVER_NAME, TOOL_NAMES

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import IO, Any

CLIENT = "cursor"
TASK_PREFIX = "cursor-"
SESSION_KEYS = ("conversation_id", "session_id")


def _use_id(data: Mapping[str, Any], what: str) -> str:
    return f"{data.get('generation_id') or ''}:{digest(what)}"


def session_start(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    text, note = events.start_context(conn, w, None, TASK_PREFIX, 0, events.printed)
    return ({"additional_context": text} if text else None), note


def before_submit_prompt(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    return {"continue": True}, events.prompt(conn, w, data.get("prompt"))


def after_shell(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    command = str(data.get("command") or "")
    event = ToolEvent(
        "Bash", {"command": command}, str(data.get("output") or ""), False, _use_id(data, command), w.now()
    )
    return None, events.tool(conn, w, event, TASK_PREFIX)[1]


def after_mcp(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    tool = str(data.get("tool_name") or "tool")
    raw = data.get("tool_input")
    try:
        given = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        given = {"input": raw}
    server = SERVER_NAME if tool in TOOL_NAMES else "cursor-mcp"  # Cursor does not say which server a tool is from
    result = data.get("result_json")
    output = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False) if result is not None else ""
    event = ToolEvent(
        f"mcp__{server}__{tool}",
        given if isinstance(given, dict) else {},
        output,
        False,
        _use_id(data, f"{tool}{raw}"),
        w.now(),
    )
    return None, events.tool(conn, w, event, TASK_PREFIX)[1]


def after_file_edit(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    path = events.absolute(data.get("file_path"), data.get("cwd"))
    if path is None:
        return None, "no file_path: nothing recorded"
    event = ToolEvent("Edit", {"file_path": path}, "", False, _use_id(data, path), w.now())
    return None, events.tool(conn, w, event, TASK_PREFIX)[1]


def stop(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    active = isinstance(data.get("loop_count"), int) and data["loop_count"] > 0
    reason = events.gate(conn, w, active or data.get("status") not in (None, "completed"))
    return ({"followup_message": reason}, "blocked once: unverified changes") if reason else (None, "")


HANDLERS: dict[str, events.Handler] = {
    "sessionStart": session_start,
    "beforeSubmitPrompt": before_submit_prompt,
    "afterShellExecution": after_shell,
    "afterMCPExecution": after_mcp,
    "afterFileEdit": after_file_edit,
    "stop": stop,
}
FALLBACK = {"beforeSubmitPrompt": {"continue": True}}


def run(event: str, stdin: IO[bytes], stdout: IO[str], env: Mapping[str, str]) -> int:
    """One Cursor hook event; always 0."""
    return events.run(
        CLIENT,
        HANDLERS,
        event,
        stdin,
        stdout,
        env,
        SESSION_KEYS,
        FALLBACK.get(event),
        lambda data: events.first_root(data, "workspace_roots", "cwd"),
    )
