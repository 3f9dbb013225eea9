"""shape_tool_output: the short, deterministic view of a raw output that stays in the context.

Rules by kind and source tool (seed 001): a listing shows at most 25 entries, grep at most 15
matches, search results at most 8, shell output its tail within 4 KB with the exit code and
the error lines kept, a file over 10 KB its head and tail. Every elision says what it left out.
"""

from __future__ import annotations

import re
from ctxkeep.text import LazyPattern

PREVIEW_BYTES = 4_096
FILE_INLINE_BYTES = 10_240
LINE_CHARS = 300

_LISTING = {"ls", "glob", "find", "list", "listdir", "list_dir", "list_directory", "tree", "fd"}
_GREP = {"grep", "rg", "ripgrep", "ag", "search_files", "grep_search", "codebase_search"}
_SHELL = {
    "bash",
    "shell",
    "sh",
    "zsh",
    "terminal",
    "run",
    "exec",
    "command",
    "run_command",
    "execute_command",
    "powershell",
}
_SEARCH = {"websearch", "web_search", "search", "google", "bing", "brave_search", "tavily"}
_FILE = {"read", "read_file", "view", "cat", "open", "readfile"}

_EXIT_CODE = LazyPattern(
    r"<returncode>\s*(-?\d+)\s*</returncode>|\bexit(?:ed with)? (?:code|status)[: ]+(-?\d+)", re.IGNORECASE
)
_ERROR_LINE = LazyPattern(
    r"\b(?:error|exception|traceback|failed|failure|fatal|panic|denied|not found)\b", re.IGNORECASE
)


def _tool(source: str | None) -> str:
    found = re.match(r"\s*(?:mcp__[\w-]+__)?([A-Za-z_][\w.-]*)", source or "")
    return found.group(1).lower() if found else ""


def _shape(kind: str, source: str | None) -> str:
    tool = _tool(source)
    for shape, names in (
        ("listing", _LISTING),
        ("grep", _GREP),
        ("shell", _SHELL),
        ("search", _SEARCH),
        ("file", _FILE),
    ):
        if tool in names:
            return shape
    return "file" if kind == "file" else "search" if kind == "web" and "search" in tool else "text"


def _clip(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + f"… (+{len(line) - LINE_CHARS} chars)"


def _first(lines: list[str], limit: int, noun: str) -> str:
    shown = [_clip(line) for line in lines[:limit]]
    if len(lines) > limit:
        shown.append(f"… {len(lines) - limit} more {noun}")
    return "\n".join(shown)


def _within(lines: list[str], budget: int, from_end: bool) -> list[str]:
    """As many whole (clipped) lines as fit in `budget` UTF-8 bytes, from the start or the end."""
    picked: list[str] = []
    used = 0
    for line in reversed(lines) if from_end else lines:
        size = len(_clip(line).encode()) + 1
        if used + size > budget:
            break
        picked.append(_clip(line))
        used += size
    return picked[::-1] if from_end else picked


def _head_tail(lines: list[str], budget: int = PREVIEW_BYTES) -> str:
    head = _within(lines, budget // 2, from_end=False)
    tail = _within(lines[len(head) :], budget // 2, from_end=True)
    hidden = len(lines) - len(head) - len(tail)
    return "\n".join(head + ([f"… {hidden} lines not shown …"] if hidden else []) + tail)


def _shell(content: str, lines: list[str]) -> str:
    codes = [next(g for g in found.groups() if g is not None) for found in _EXIT_CODE.finditer(content)]
    tail = _within(lines, PREVIEW_BYTES, from_end=True)
    hidden = len(lines) - len(tail)
    errors = [_clip(line) for line in lines[:hidden] if _ERROR_LINE.search(line)][:20]
    parts = [f"exit code: {codes[-1]}"] if codes else []
    if errors:
        parts += ["error lines above the tail:", *errors]
    if hidden:
        parts.append(f"… {hidden} earlier lines not shown …")
    return "\n".join(parts + tail)


def _search_results(content: str) -> str:
    blocks = [block for block in re.split(r"\n\s*\n", content.strip()) if block.strip()]
    if len(blocks) <= 1:
        return _first(content.splitlines(), 40, "lines")
    shown = [_head_tail(block.splitlines(), PREVIEW_BYTES // 8) for block in blocks[:8]]
    more = [f"… {len(blocks) - 8} more results"] if len(blocks) > 8 else []
    return "\n\n".join(shown + more)


def shape_tool_output(content: str, kind: str = "tool_result", source: str | None = None) -> str:
    """The preview of `content` for its kind and source tool; the same input always gives the same text."""
    lines = content.splitlines()
    shape = _shape(kind, source)
    if shape == "listing":
        return _first(lines, 25, "entries")
    if shape == "grep":
        return _first(lines, 15, "matches")
    if shape == "search":
        return _search_results(content)
    if shape == "shell":
        return _shell(content, lines)
    limit = FILE_INLINE_BYTES if shape == "file" else PREVIEW_BYTES
    if len(content.encode("utf-8")) <= limit and all(len(line) <= LINE_CHARS for line in lines):
        return content
    return _head_tail(lines)
