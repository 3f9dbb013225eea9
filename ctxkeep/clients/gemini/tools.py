"""Gemini CLI's tool calls as the client core's: the same records whether a call is seen live (AfterTool) or read from
the chat file. Names and arguments as Gemini CLI 0.61 declares them (verified: `run_shell_command {command}`,
`read_file {file_path}`, `write_file {file_path, content}`, `replace {file_path, old_string, new_string}`,
`grep_search`, `glob`, `list_directory`, `web_fetch`, `google_web_search`, `write_todos {todos}`; MCP tools as
`mcp_<server>_<tool>`, told apart by the hook's `mcp_context`). Standard library only.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from ctxkeep.clients.core.capture import ToolEvent
from ctxkeep.clients.core.events import absolute
from ctxkeep.clients.core.transcripts import text_parts
from ctxkeep.text import LazyPattern

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import Any

_CORE = {
    "run_shell_command": "Bash",
    "read_file": "Read",
    "write_file": "Write",
    "replace": "Edit",
    "grep_search": "Grep",
    "search_file_content": "Grep",
    "glob": "Glob",
    "list_directory": "LS",
    "web_fetch": "WebFetch",
    "google_web_search": "WebSearch",
    "write_todos": "TodoWrite",
}
_UNTRUSTED = LazyPattern(r"^<untrusted_context>\n?(.*?)\n?</untrusted_context>", re.DOTALL)
_HOOK_CONTEXT = LazyPattern(r"\s*<hook_context>.*?</hook_context>\s*", re.DOTALL)
_EXIT = LazyPattern(r"^Exit Code: (\d+)", re.MULTILINE)


def without_hook_context(text: str) -> str:
    """A prompt without the `<hook_context>…</hook_context>` blocks Gemini prepends (SessionStart's context)."""
    return _HOOK_CONTEXT.sub("\n", text).strip()


def output_text(response: Any) -> str:
    """What the model read of a tool's result: `llmContent` (a string or text parts), without Gemini's
    `<untrusted_context>` wrapper."""
    content = response.get("llmContent", response.get("output")) if isinstance(response, dict) else response
    text = text_parts(content) if not isinstance(content, str) else content
    found = _UNTRUSTED.match(text)
    return found.group(1) if found else text


def _todos(given: Mapping[str, Any]) -> dict[str, Any]:
    todos = given.get("todos")
    return {
        "todos": [
            {
                "content": str(t.get("description") or t.get("content") or ""),
                "status": str(t.get("status") or "pending"),
            }
            for t in (todos if isinstance(todos, list) else [])
            if isinstance(t, dict)
        ]
    }


def tool_event(
    name: str,
    given: Any,
    output: str,
    failed: bool,
    use_id: str,
    at: str,
    cwd: Any,
    server: tuple[str, str] | None = None,
    file_path: Any = None,
) -> ToolEvent:
    """One Gemini tool call as the core's: core names and argument keys, file paths absolute (`file_path` is the one
    Gemini reports back, when it does), MCP tools as `mcp__<server>__<tool>`."""
    data: dict[str, Any] = dict(given) if isinstance(given, dict) else {}
    if server is not None:
        return ToolEvent(f"mcp__{server[0]}__{server[1]}", data, output, failed, use_id, at)
    core = _CORE.get(name)
    if core is None:
        return ToolEvent(name, data, output, failed, use_id, at)
    if core == "TodoWrite":
        data = _todos(data)
    elif core in ("Read", "Write", "Edit"):
        data["file_path"] = absolute(
            file_path if isinstance(file_path, str) else data.get("file_path"), cwd
        ) or data.get("file_path")
    if core == "Bash":
        code = _EXIT.findall(output)
        failed = failed or bool(code and code[-1] != "0")
    return ToolEvent(core, data, output, failed, use_id, at)


def mcp_of(name: str, context: Any) -> tuple[str, str] | None:
    """(server, tool) of an MCP call: from the hook's `mcp_context`, else None."""
    if (
        isinstance(context, dict)
        and isinstance(context.get("server_name"), str)
        and isinstance(context.get("tool_name"), str)
    ):
        return context["server_name"], context["tool_name"]
    return None
