"""What a tool output is to the evidence store, for compress_history and the hooks alike.

- A shaped view: the text ctxkeep's hooks put in the model's context in place of a large output
  (`clients.core.shaping.view_text`). The raw output it stands for is the evidence item, under the ref the view names;
  the view is a preview of it, never an item of its own (it would rank above the output it stands for).
- An output that says nothing: an edit's confirmation ("The file … has been updated"; the edit is recorded as such)
  and the answer to a call of a tool that does not exist (Claude Code's "No such tool available", Codex's
  "unsupported call", Gemini's `Tool "x" not found`). Neither is stored as evidence nor offloaded.
Standard library only (the per-event hooks use it).
"""

from __future__ import annotations

from ctxkeep.text import LazyPattern

VIEW_HEAD = "[ctxkeep: the full output of "
_VIEW = LazyPattern(
    r"\[ctxkeep: the full output of [^\n]{1,300}? \([\d,]+ bytes, [\d,]+ lines\) is stored as evidence "
    r"(ev_[0-9a-f]{8,64}); below is a shaped view \([\d,]+ lines\)\.\]\n"
)
# the tools whose output confirms an edit, by the names the clients and the core give them
EDIT_TOOLS = frozenset(["Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch", "replace", "write_file"])
_NO_SUCH_TOOL = LazyPattern(
    r"\A\s*(?:<tool_use_error>\s*)?(?:Error:\s*)?(?:No such tool available\b|unsupported call\b|"
    r"Tool \"[^\"\n]{1,200}\" not found\b)"
)


def view_ref(text: str) -> str | None:
    """The ref of the output a ctxkeep shaped view stands for, when `text` is one; else None."""
    if not text.startswith(VIEW_HEAD):
        return None
    found = _VIEW.match(text)
    return found.group(1) if found else None


def says_nothing(tool: str, text: str, is_error: bool) -> bool:
    """Whether an output is an edit's confirmation or the answer to a call of a tool that does not exist."""
    if tool in EDIT_TOOLS and not is_error:
        return True
    return len(text) < 2_000 and _NO_SUCH_TOOL.match(text) is not None
