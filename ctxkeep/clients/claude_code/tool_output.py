"""Claude Code's `tool_response` (PostToolUse), read as the text the model would see, and the replacement that puts a
shaped view there instead.

Claude Code checks a replacement against the tool's own output schema and silently drops one that does not fit
(verified with 2.1.332): Bash takes `{"stdout", "stderr", "interrupted"}`, MCP tools a string, Grep, Glob, Read and
WebFetch their own objects with the large field replaced. Bash output over ~30,000 characters is cut in the hook
input and kept whole in `persistedOutputPath`, which is read (under the allowed roots) so the whole output is kept.
Standard library only (per-event hooks).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence

from ctxkeep.project import is_under

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import Any

MAX_PERSISTED_BYTES = 64 * 1024 * 1024


def _persisted(response: Mapping[str, Any], roots: Sequence[str]) -> str | None:
    path = response.get("persistedOutputPath")
    if not isinstance(path, str):
        return None
    try:
        real = os.path.realpath(path)
        if not any(is_under(real, root) for root in roots) or os.stat(real).st_size > MAX_PERSISTED_BYTES:
            return None
        with open(real, encoding="utf-8", errors="replace") as persisted:
            return persisted.read()
    except (OSError, ValueError):
        return None


def output_text(tool: str, response: Any, roots: Sequence[str]) -> str:
    """The output of a tool call as text: what was printed, matched, listed or fetched."""
    if isinstance(response, str):
        return response
    if not isinstance(response, dict):
        return json.dumps(response, ensure_ascii=False) if response is not None else ""
    if tool == "Bash":
        stdout = _persisted(response, roots) or str(response.get("stdout") or "")
        stderr = str(response.get("stderr") or "")
        return stdout + ("\n" + stderr if stderr and stdout else stderr)
    if tool in ("Grep", "Glob") and not response.get("content"):
        return "\n".join(str(f) for f in response.get("filenames") or [])
    if tool == "Grep":
        return str(response.get("content") or "")
    if tool == "Read" and isinstance(response.get("file"), dict):
        return str(response["file"].get("content") or "")
    if tool == "WebFetch":
        return str(response.get("result") or "")
    return json.dumps(response, ensure_ascii=False)


def replacement(tool: str, response: Any, view: str) -> dict[str, Any] | None:
    """The `hookSpecificOutput` that replaces the output with `view`, or None when this tool's output cannot be
    replaced (it is then kept as it is; the offload and the records still happen)."""
    out: dict[str, Any] = {"hookEventName": "PostToolUse"}
    if tool.startswith("mcp__"):
        return {**out, "updatedMCPToolOutput": view, "updatedToolOutput": view}
    if not isinstance(response, dict):
        return None
    if tool == "Bash":
        return {
            **out,
            "updatedToolOutput": {"stdout": view, "stderr": "", "interrupted": bool(response.get("interrupted"))},
        }
    if tool in ("Grep", "Glob") and not response.get("content"):
        lines = view.splitlines()
        return {
            **out,
            "updatedToolOutput": {**response, "filenames": lines, "numFiles": response.get("numFiles", len(lines))},
        }
    if tool == "Grep":
        return {**out, "updatedToolOutput": {**response, "content": view, "numLines": len(view.splitlines())}}
    if tool == "Read" and isinstance(response.get("file"), dict):
        return {**out, "updatedToolOutput": {**response, "file": {**response["file"], "content": view}}}
    if tool == "WebFetch":
        return {**out, "updatedToolOutput": {**response, "result": view}}
    return None
