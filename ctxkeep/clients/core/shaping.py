"""Tool-output shaping (seed 001, layer 1): a large tool output leaves the context, the model gets a shaped view.

Per tool family, over its limit: shell output over 4 KB, grep over 15 matches, a glob or listing over 25 entries,
a web fetch or search over 10 KB or 8 results, another MCP server's tool over 8 KB; Read only when
`CTXKEEP_SHAPE_READ=1` (an agent that edits a file needs its exact text). Never ctxkeep's own tools, never edits.
The raw output goes to evidence first (redacted, under a ref computed from its content); the view is the preview
of `shape_tool_output`, the ref, how much was left out and the exact `evidence_get` call that brings back the rest.
`CTXKEEP_SHAPE=off` turns shaping off (outputs are then still offloaded and recorded); `CTXKEEP_SHAPE_LIMITS`
(`shell=8000,grep=30,…`) sets limits. Standard library only (per-event hooks).
"""

from __future__ import annotations

from collections.abc import Mapping

from ctxkeep.environment import switch
from ctxkeep.tool_names import SERVER_NAME

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from ctxkeep.named_tuple import NamedTuple

DEFAULT_LIMITS = {"shell": 4_096, "grep": 15, "listing": 25, "web": 10_240, "mcp": 8_192, "read": 10_240}
_FAMILY = {
    "Bash": "shell",
    "BashOutput": "shell",
    "KillShell": "shell",
    "Grep": "grep",
    "Glob": "listing",
    "LS": "listing",
    "WebFetch": "web",
    "WebSearch": "web",
    "Read": "read",
}
_COUNTED = {"grep": "matches", "listing": "entries"}  # limits counted in lines; the others in UTF-8 bytes


class Shaping(NamedTuple):
    enabled: bool
    read: bool
    limits: Mapping[str, int]


class Offload(NamedTuple):
    """An output taken out of the context: the redacted content to store and the view the model gets instead."""

    ref: str
    content: str
    redactions: int
    view: str
    family: str
    lines: int
    size: int


def shaping_from_env(env: Mapping[str, str]) -> Shaping:
    limits = dict(DEFAULT_LIMITS)
    for part in env.get("CTXKEEP_SHAPE_LIMITS", "").split(","):
        name, _, value = part.partition("=")
        if name.strip() in limits and value.strip().isdigit() and int(value) > 0:
            limits[name.strip()] = int(value)
    return Shaping(switch(env, "CTXKEEP_SHAPE", True), switch(env, "CTXKEEP_SHAPE_READ", False), limits)


def family_of(tool: str) -> str | None:
    """The shaping family of a tool, or None for tools never shaped (edits, todos, ctxkeep's own tools, …)."""
    if tool.startswith("mcp__"):
        return None if tool.split("__")[1] == SERVER_NAME else "mcp"
    return _FAMILY.get(tool)


def over_limit(family: str, text: str, shaping: Shaping) -> bool:
    limit = shaping.limits[family]
    if family in _COUNTED:
        return sum(1 for line in text.splitlines() if line.strip()) > limit
    if family == "web" and text.count("\n- ") + text.count("\nhttp") > 8:
        return True
    return len(text.encode("utf-8")) > limit


def _call(ref: str, lines: int) -> str:
    return (
        f'evidence_get(ref="{ref}", mode="lines", start=1, end={min(lines, 200)}) for lines, or mode="grep" with a '
        'pattern, or mode="full"'
    )


def view_text(offload_ref: str, content: str, preview: str, tool: str, lines: int, size: int) -> str:
    shown = len(preview.splitlines())
    return (
        f"[ctxkeep: the full output of {tool} ({size:,} bytes, {lines:,} lines) is stored as evidence {offload_ref}; "
        f"below is a shaped view ({shown:,} lines).]\n{preview}\n"
        f"[ctxkeep: the rest is not lost. Fetch it with {_call(offload_ref, lines)}.]"
    )


def offload(project: str, task_id: str, tool: str, family: str, raw: str) -> Offload:
    """The output redacted, its ref (the same ref `evidence_put` gives this content) and the shaped view."""
    import hashlib

    from ctxkeep.tools.shared.preview import shape_tool_output
    from ctxkeep.tools.redaction.redact import redact_secrets
    from ctxkeep.tools.shared.refs import evidence_ref

    content, redactions = redact_secrets(raw)
    data = content.encode("utf-8")
    ref = evidence_ref(project, hashlib.sha256(data).hexdigest(), "tool_result", tool, None, task_id)
    lines = content.count("\n") + (0 if content == "" or content.endswith("\n") else 1)
    preview = shape_tool_output(content, "tool_result", tool)
    return Offload(
        ref, content, redactions, view_text(ref, content, preview, tool, lines, len(data)), family, lines, len(data)
    )


def compressed(content: str) -> bytes:
    import zlib

    return zlib.compress(content.encode("utf-8"), 6)
