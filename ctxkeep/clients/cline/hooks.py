"""`ctxkeep hook cline <event>`: Cline's hooks mapped onto the client core, on the standard library only.

Cline runs an executable named after the event with JSON on stdin: `taskId`, `clineVersion`, `timestamp`,
`workspaceRoots` (older builds: `workspacePath`) and one object named after the event (docs.cline.bot/customization/
hooks, hook reference). It reads `{"cancel": bool, "contextModification": text, "errorMessage": text}` on stdout, so
every answer, also after a failure, is at least `{"cancel": false}`:
- TaskResume: the records' view as `contextModification` (a resumed task under the same id gets its records back);
- TaskStart (`taskStart.task`) and UserPromptSubmit (`userPromptSubmit.prompt`): records the prompt;
- PostToolUse (`postToolUse.tool` or `.toolName`, `.parameters`, `.result`, `.success`): the records of each call,
  Cline's tool names mapped to the core's (`execute_command` → Bash, `read_file` → Read, `write_to_file` → Write,
  `replace_in_file` → Edit, `use_mcp_tool` → `mcp__<server>__<tool>`); a large output is offloaded to evidence, but
  stays in the context (`cancel` would stop the task, nothing replaces an output).
Cline has no stop event that can block, and PreCompact shows no summary: no gate, no compaction repair.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ctxkeep.clients.core import events
from ctxkeep.clients.core.capture import ToolEvent, digest
from ctxkeep.clients.core.hook_io import Where
from ctxkeep.storage.hook_store import HotSession

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import IO, Any

CLIENT = "cline"
TASK_PREFIX = "cline-"
SESSION_KEYS = ("taskId",)
NEUTRAL = {"cancel": False}
_PATH = {"path": "file_path"}
TOOLS: events.ToolMap = {
    "execute_command": ("Bash", {}),
    "read_file": ("Read", _PATH),
    "write_to_file": ("Write", _PATH),
    "replace_in_file": ("Edit", _PATH),
    "search_files": ("Grep", {"regex": "pattern"}),
    "list_files": ("LS", _PATH),
    "web_fetch": ("WebFetch", {}),
}


def _part(data: Mapping[str, Any], key: str) -> dict[str, Any]:
    part = data.get(key)
    return part if isinstance(part, dict) else {}


def tool_event(data: Mapping[str, Any], w: Where) -> ToolEvent:
    post = _part(data, "postToolUse")
    name = str(post.get("toolName") or post.get("tool") or "tool")
    raw = post.get("parameters")
    params: dict[str, Any] = raw if isinstance(raw, dict) else {}
    result = post.get("result")
    output = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False) if result is not None else ""
    failed = post.get("success") is False
    use_id = f"{data.get('timestamp') or ''}:{digest(name + json.dumps(params, sort_keys=True, default=str))}"
    if name == "use_mcp_tool":
        arguments = params.get("arguments")
        try:
            given = json.loads(arguments) if isinstance(arguments, str) else arguments
        except ValueError:
            given = {"arguments": arguments}
        server, tool = params.get("server_name") or "mcp", params.get("tool_name") or "tool"
        return ToolEvent(
            f"mcp__{server}__{tool}", given if isinstance(given, dict) else {}, output, failed, use_id, w.now()
        )
    core, given = events.canonical(name, params, TOOLS, data.get("cwd"))
    return ToolEvent(core, given, output, failed, use_id, w.now())


def task_resume(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    text, note = events.start_context(conn, w, None, TASK_PREFIX, 0, events.printed)
    return ({**NEUTRAL, "contextModification": text} if text else NEUTRAL), note


def task_start(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    return NEUTRAL, events.prompt(conn, w, _part(data, "taskStart").get("task"))


def user_prompt_submit(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    return NEUTRAL, events.prompt(conn, w, _part(data, "userPromptSubmit").get("prompt"))


def post_tool_use(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    return NEUTRAL, events.tool(conn, w, tool_event(data, w), TASK_PREFIX)[1]


HANDLERS: dict[str, events.Handler] = {
    "TaskStart": task_start,
    "TaskResume": task_resume,
    "UserPromptSubmit": user_prompt_submit,
    "PostToolUse": post_tool_use,
}


def run(event: str, stdin: IO[bytes], stdout: IO[str], env: Mapping[str, str]) -> int:
    """One Cline hook event; always 0, and always a JSON answer Cline accepts."""
    return events.run(
        CLIENT,
        HANDLERS,
        event,
        stdin,
        stdout,
        env,
        SESSION_KEYS,
        NEUTRAL,
        lambda data: events.first_root(data, "workspaceRoots", "workspacePath"),
    )
