"""`ctxkeep hook windsurf <event>`: Windsurf's Cascade hooks mapped onto the client core, on the standard library only.

Input: `agent_action_name`, `trajectory_id` (the session), `execution_id`, `timestamp`, `tool_info` with the event's
fields (docs.windsurf.com/windsurf/cascade/hooks). Cascade hooks cannot add context and only pre-hooks can block
(exit 2), so these only record, and print nothing:
- pre_user_prompt (`tool_info.user_prompt`): the prompt;
- post_run_command (`command_line`, `cwd`): the command (its output is not in the input);
- post_read_code / post_write_code (`file_path`): what verifies a write, and the write;
- post_mcp_tool_use (`mcp_server_name`, `mcp_tool_name`, `mcp_tool_arguments`, `mcp_result`): the call; a large
  result is offloaded to evidence, but stays in the context.
What Cascade is told comes from the rules file install writes (`.windsurf/rules/ctxkeep.md`), not from a hook.
"""

from __future__ import annotations

from collections.abc import Mapping

from ctxkeep.clients.core import events
from ctxkeep.clients.core.capture import ToolEvent, digest
from ctxkeep.clients.core.hook_io import Where
from ctxkeep.storage.hook_store import HotSession

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import IO, Any

CLIENT = "windsurf"
TASK_PREFIX = "windsurf-"
SESSION_KEYS = ("trajectory_id",)


def _info(data: Mapping[str, Any]) -> dict[str, Any]:
    info = data.get("tool_info")
    return info if isinstance(info, dict) else {}


def _cwd(data: Mapping[str, Any]) -> str | None:
    cwd = _info(data).get("cwd")
    return cwd if isinstance(cwd, str) else None


def _record(
    conn: HotSession, w: Where, data: Mapping[str, Any], name: str, given: dict[str, Any], output: str = ""
) -> events.Reply:
    use_id = f"{data.get('execution_id') or ''}:{digest(name + str(given))}"
    return None, events.tool(conn, w, ToolEvent(name, given, output, False, use_id, w.now()), TASK_PREFIX)[1]


def pre_user_prompt(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    return None, events.prompt(conn, w, _info(data).get("user_prompt"))


def post_run_command(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    return _record(conn, w, data, "Bash", {"command": str(_info(data).get("command_line") or "")})


def post_read_code(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    path = events.absolute(_info(data).get("file_path"), data.get("cwd"))
    return _record(conn, w, data, "Read", {"file_path": path}) if path else (None, "")


def post_write_code(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    path = events.absolute(_info(data).get("file_path"), data.get("cwd"))
    return _record(conn, w, data, "Edit", {"file_path": path}) if path else (None, "")


def post_mcp_tool_use(conn: HotSession, w: Where, data: dict[str, Any]) -> events.Reply:
    info = _info(data)
    name = f"mcp__{info.get('mcp_server_name') or 'mcp'}__{info.get('mcp_tool_name') or 'tool'}"
    given = info.get("mcp_tool_arguments")
    result = info.get("mcp_result")
    return _record(
        conn,
        w,
        data,
        name,
        given if isinstance(given, dict) else {},
        result if isinstance(result, str) else str(result or ""),
    )


HANDLERS: dict[str, events.Handler] = {
    "pre_user_prompt": pre_user_prompt,
    "post_run_command": post_run_command,
    "post_read_code": post_read_code,
    "post_write_code": post_write_code,
    "post_mcp_tool_use": post_mcp_tool_use,
}


def run(event: str, stdin: IO[bytes], stdout: IO[str], env: Mapping[str, str]) -> int:
    """One Windsurf hook event; always 0, nothing printed."""
    return events.run(CLIENT, HANDLERS, event, stdin, stdout, env, SESSION_KEYS, None, _cwd)
