"""What compress_history keeps as evidence from a history the hooks took part in: a shaped view the hooks put in place
of a large output is not an item of its own (the raw output it stands for is the item, and ranks first in search);
an edit's confirmation and the answer to a call of a tool that does not exist are not evidence at all; and an output
the hooks offloaded is counted with the tokenizer when it is taken in, not estimated."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import anyio

from ctxkeep.clients.core.shaping import view_text
from ctxkeep.models.compress import CompressRequest
from ctxkeep.models.evidence import EvidenceSearchRequest
from ctxkeep.storage import open_store
from ctxkeep.tokens import count_tokens
from ctxkeep.tools.compression import compress_history
from ctxkeep.tools.evidence import evidence_search
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.shared.tool_outputs import says_nothing, view_ref
from tests.claude_home import Claude, bash

BIG = (
    "\n".join(f"line {n}: linking module_{n}.o against libfoo ... ok" for n in range(3_000))
    + "\nERROR: module_2999 failed to link: undefined reference to `frobnicate_widget`\n"
)
NO_SUCH_TOOL = "<tool_use_error>Error: No such tool available: mcp__tracker__get_issue</tool_use_error>"
EDITED = "The file /p/src/app.py has been updated. Here's the result of running `cat -n` on a snippet:\n  1\tx = 2\n"


def _view(out: dict[str, Any] | None) -> str:
    assert out is not None
    return str(out["hookSpecificOutput"]["updatedToolOutput"]["stdout"])


def _history(view: str) -> list[dict[str, Any]]:
    """A conversation as Claude Code keeps it: the model saw the shaped view in place of the big output."""
    calls = [
        ("t1", "Bash", {"command": "make"}, view, False),
        ("t2", "Edit", {"file_path": "/p/src/app.py", "old_string": "x = 1", "new_string": "x = 2"}, EDITED, False),
        ("t3", "mcp__tracker__get_issue", {"id": 7}, NO_SUCH_TOOL, True),
        ("t4", "Bash", {"command": "pytest -q"}, "3 failed, 40 passed: test_widget_frobnicate failed", False),
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Fix the link error in module_2999."}]
    for use_id, name, given, output, error in calls:
        messages.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": use_id, "name": name, "input": given}]}
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": use_id, "content": output, "is_error": error}],
            }
        )
    messages.append({"role": "assistant", "content": "I will look at frobnicate_widget next."})
    return messages


def test_a_shaped_view_made_by_the_hooks_names_its_ref() -> None:
    view = view_text("ev_0123456789abcdef01234567", "x\n" * 9, "x\n…", "Bash", 9, 18)
    assert view_ref(view) == "ev_0123456789abcdef01234567"
    assert view_ref("line 1\n" + view) is None and view_ref("[ctxkeep: the full output of nothing]") is None


def test_edit_confirmations_and_calls_of_missing_tools_say_nothing() -> None:
    assert says_nothing("Edit", EDITED, False) and says_nothing("Write", "File created successfully at: /p/a", False)
    assert says_nothing("mcp__tracker__get_issue", NO_SUCH_TOOL, True)
    assert says_nothing("shell", "unsupported call: frob", True) and says_nothing("x", 'Tool "frob" not found.', True)
    assert not says_nothing("Edit", "String to replace not found in file.", True)  # a failed edit is worth keeping
    assert not says_nothing("Bash", "No such file or directory", True)


def test_the_raw_output_is_the_item_a_view_and_a_confirmation_are_not(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    view = _view(claude.post_tool_use(*bash("make", BIG)))
    raw_ref = view_ref(view)
    assert raw_ref is not None

    async def run() -> tuple[list[str], list[tuple[str, str]], list[str]]:
        store = await open_store(claude.db)
        try:
            scope = Scope(store=store, project=str(claude.project.resolve()))
            request = CompressRequest(messages=_history(view), format="anthropic", keep_recent=1, shape_window=100)
            done = await compress_history(scope, request)
            hits = await evidence_search(scope, EvidenceSearchRequest(query="module_2999 failed to link frobnicate"))
            return done.evidence_refs, [(h.ref, h.title or "") for h in hits.hits], [h.ref for h in hits.hits]
        finally:
            await store.close()

    refs, hits, ordered = anyio.run(run)
    assert raw_ref in refs and len(refs) == 2  # the view's raw output and the pytest run; no edit, no missing tool
    assert ordered[0] == raw_ref, hits
    titles = {ref: title or "" for ref, title in claude.rows("SELECT ref, title FROM evidence")}
    assert titles[raw_ref] == ""  # the hooks' offload, under the ref the model was shown
    assert sorted(t.split(":")[0] for t in titles.values() if t) == ["Bash"]  # `Bash: pytest -q`; no view of `make`
    assert all(not t.startswith(("Bash: make", "Edit", "mcp__tracker")) for t in titles.values())


def test_an_offloaded_output_is_counted_with_the_tokenizer_when_it_is_taken_in(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    ref = view_ref(_view(claude.post_tool_use(*bash("make", BIG))))
    prompt = {
        "type": "user",
        "message": {"role": "user", "content": "Fix the link error."},
        "timestamp": "2026-01-01T00:00:00Z",
    }
    claude.transcript.write_text(json.dumps(prompt) + "\n", encoding="utf-8")
    claude.hook("pre-compact", claude.base("PreCompact", trigger="auto"))  # its worker counts with the estimate
    claude.hook("session-start", claude.base("SessionStart", source="resume"))  # waits for the worker
    assert "Claude Code worker ok" in claude.logged()

    async def search() -> None:
        store = await open_store(claude.db)
        try:
            scope = Scope(store=store, project=str(claude.project.resolve()))
            await evidence_search(scope, EvidenceSearchRequest(query="module_2999"))  # takes the inbox in
        finally:
            await store.close()

    anyio.run(search)
    with sqlite3.connect(claude.db) as db:
        (tokens,) = db.execute("SELECT tokens FROM evidence WHERE ref = ?", (ref,)).fetchone()
    assert tokens == count_tokens(BIG) and tokens != (len(BIG.encode()) + 3) // 4
