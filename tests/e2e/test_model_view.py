"""What the model sees, measured in the requests the real CLIs send (issue 17's acceptance).

Claude Code (definitions sent with alwaysLoad) and Codex CLI each run a scripted task against
`ctxkeep serve`: save a checkpoint, store evidence, build a 2,000-token working set, load the
checkpoint. The mock of their model API records every request; the assertions read the last one:
ctxkeep's tool definitions (name, description, input schema as sent, cl100k tokens), the server
instructions, and each tool result as the model receives it. Gemini CLI runs the same script for
the results (it has no definition budget of ours to check: it rewrites the schemas).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ctxkeep.server.instructions import INSTRUCTIONS
from ctxkeep.tokens import count_tokens
from tests.conftest import procurement_state
from tests.e2e.clients import claude_code, codex, gemini
from tests.e2e.mock_api import call, text

pytestmark = pytest.mark.slow
DEFINITION_BUDGET = 4_000
WORKING_SET_BUDGET = 2_000
QUOTES = [
    {
        "content": f"Quote {n} from Supplier {chr(65 + n % 20)}: unit price {2 + n / 100:.2f} USD/piece, freight "
        f"{0.3 + n / 200:.3f} USD/piece, lead time {14 + n % 9} days, MOQ {1_000 * (n % 7 + 1):,} pieces.",
        "kind": "document",
        "source": "mail",
        "title": f"quote {n}",
        "task_id": "proc",
    }
    for n in range(60)
]
SCRIPT = [
    call("checkpoint_save", {"task_id": "proc", "state": procurement_state()}),
    call("evidence_put", {"items": QUOTES}),
    call(
        "build_working_set",
        {"task_id": "proc", "focus": "freight per piece of each supplier", "budget_tokens": WORKING_SET_BUDGET},
    ),
    call("checkpoint_load", {"task_id": "proc"}),
    text("done"),
]


def definition_tokens(tools: dict[str, dict[str, Any]], schema_key: str) -> int:
    """cl100k tokens of each definition's name, description and input schema, as compact JSON (as sent)."""
    return sum(
        count_tokens(
            json.dumps(
                {"name": t["name"], "description": t.get("description", ""), schema_key: t[schema_key]},
                ensure_ascii=False,
                separators=(",", ":"),
            )
        )
        for t in tools.values()
    )


def _run(start: Callable[..., Any], root: Path) -> tuple[Any, dict[str, Any]]:
    with start(root, SCRIPT) as cli:
        done = cli.run("Save the task, store the quotes, build the working set, then load the task.")
        assert done.returncode == 0, done.stderr[-3000:]
        last = cli.requests()[-1].body
    return cli, last


@pytest.mark.parametrize(
    ("start", "schema_key"), [(claude_code, "input_schema"), (codex, "parameters")], ids=["claude_code", "codex"]
)
def test_the_definitions_fit_4000_tokens_and_the_instructions_arrive_whole(
    tmp_path: Path, start: Callable[..., Any], schema_key: str
) -> None:
    with start(tmp_path, [text("ok")]) as cli:
        assert cli.run("hello").returncode == 0
        body = cli.requests()[-1].body
        tools = cli.tools(body)
        instructions = cli.instructions(body)
    assert len(tools) >= 7 and definition_tokens(tools, schema_key) <= DEFINITION_BUDGET
    assert INSTRUCTIONS.strip() in instructions and len(INSTRUCTIONS) <= 2_000


@pytest.mark.parametrize("start", [claude_code, codex, gemini], ids=["claude_code", "codex", "gemini"])
def test_the_working_set_and_the_brief_reach_the_model_as_readable_text_within_budget(
    tmp_path: Path, start: Callable[..., Any]
) -> None:
    cli, last = _run(start, tmp_path)
    saved, stored, working_set, brief = cli.tool_results(last)
    assert not working_set.lstrip().startswith("{") and "\\n" not in working_set  # text, not JSON with escaped markdown
    assert (
        working_set.startswith("# Task proc")
        and "## Evidence" in working_set
        and "Supplier C freight = 0.48 USD/piece" in working_set
    )
    assert count_tokens(working_set) <= WORKING_SET_BUDGET * 1.03
    assert brief.startswith("# Resume: proc (v1") and "PO-1" in brief and not brief.lstrip().startswith("{")
    assert "proc" in saved and "ev_" in stored
