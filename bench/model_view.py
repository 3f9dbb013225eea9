"""What the model sees: ctxkeep's tool definitions and instructions, and each tool result as the clients show it.

Definitions: every tool's name, description and input schema as `tools/list` sends them (compact JSON, cl100k),
beside the same tools with the full pydantic schemas (what was advertised before the lean schemas).
Results: the procurement task of the earlier demo (tests/procurement.py: the task, the supplier's mail as evidence, a policy
memory, an open side effect, a 1,500-token working set) over the in-process client; for each call, the tokens a
model reads in Claude Code and Codex CLI (the compact JSON of structuredContent when present, else the text) and in
Gemini CLI (the text), beside what the same call costs as structured data (format json).
The e2e tests (tests/e2e/test_model_view.py) check the same things in the requests the real CLIs send.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import anyio
from mcp import Client

from tests.procurement import INTENT, POLICY, SUPPLIER_MAIL, V2
from ctxkeep.server import build_server
from ctxkeep.server.instructions import INSTRUCTIONS
from ctxkeep.settings import Settings
from ctxkeep.tokens import count_tokens

TEXT_TOOLS = ("checkpoint_load", "evidence_get", "evidence_search", "build_working_set")


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _definition(name: str, description: str | None, schema: dict[str, Any]) -> int:
    return count_tokens(
        _compact({"name": f"mcp__ctxkeep__{name}", "description": description or "", "input_schema": schema})
    )


def _seen(result: Any) -> tuple[int, int]:
    """(tokens a model reads in Claude Code / Codex, in Gemini) for one tool result."""
    text = "\n".join(block.text for block in result.content if hasattr(block, "text"))
    forwarded = _compact(result.structured_content) if result.structured_content is not None else text
    return count_tokens(forwarded), count_tokens(text)


async def _definitions(client: Client, server: Any) -> dict[str, Any]:
    lean = {t.name: _definition(t.name, t.description, t.input_schema) for t in (await client.list_tools()).tools}
    server.load_tools()  # the full schemas are the registered tools' (the server registers them at its first call)
    full = {t.name: _definition(t.name, t.description, t.parameters) for t in server._tool_manager.list_tools()}
    return {"lean": lean, "full": full}


async def _demo(client: Client) -> list[dict[str, Any]]:
    calls: list[tuple[str, dict[str, Any]]] = []
    mail = await client.call_tool(
        "evidence_put",
        {
            "content": SUPPLIER_MAIL,
            "kind": "document",
            "source": "mail",
            "title": "Supplier C quote v2",
            "task_id": "procurement",
        },
    )
    ref = mail.structured_content["ref"]
    state = {**V2, "facts": [{**V2["facts"][0], "source_ref": ref}], "evidence_refs": [ref]}
    calls += [
        ("checkpoint_save", {"task_id": "procurement", "state": state}),
        ("checkpoint_load", {"task_id": "procurement"}),
        ("evidence_search", {"query": "where does the freight of Supplier C come from?"}),
        ("evidence_get", {"ref": ref, "mode": "grep", "pattern": "Freight", "context": 0}),
        ("memory_write", POLICY),
        ("action_intent", INTENT),
        (
            "build_working_set",
            {"task_id": "procurement", "budget_tokens": 1_500, "focus": "Supplier C freight per piece"},
        ),
    ]
    rows = [{"tool": "evidence_put", "seen": _seen(mail), "as_json": None}]
    for tool, arguments in calls:
        result = await client.call_tool(tool, arguments)
        assert not result.is_error, tool
        as_json = (
            _seen(await client.call_tool(tool, {**arguments, "format": "json"}))[0] if tool in TEXT_TOOLS else None
        )
        rows.append({"tool": tool, "seen": _seen(result), "as_json": as_json})
    return rows


async def _measure(folder: Path) -> dict[str, Any]:
    server = build_server(Settings(db_path=folder / "view.db", project="/bench/model-view"))
    async with Client(server) as client:
        definitions = await _definitions(client, server)
        rows = await _demo(client)
    return {"definitions": definitions, "results": rows}


def run(quick: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as name:
        measured = anyio.run(_measure, Path(name))
    lean, full = measured["definitions"]["lean"], measured["definitions"]["full"]
    rows = [
        {
            "metric": f"tool definitions as tools/list sends them ({len(lean)} tools; name + description + input schema, cl100k)",
            "value": f"{sum(lean.values()):,} tokens",
            "baseline": f"{sum(full.values()):,} with the full pydantic schemas",
            "target": "≤ 4,000",
        },
        {
            "metric": "largest definitions",
            "value": ", ".join(f"{n} {t}" for n, t in sorted(lean.items(), key=lambda i: -i[1])[:3]),
            "baseline": "",
            "target": "",
        },
        {
            "metric": "server instructions",
            "value": f"{len(INSTRUCTIONS):,} characters",
            "baseline": "Claude Code cut at 2,048 before 2.1.332",
            "target": "≤ 2,000",
        },
    ]
    for row in measured["results"]:
        claude, gemini = row["seen"]
        rows.append(
            {
                "metric": f"demo: {row['tool']} result as the model reads it (Claude Code, Codex / Gemini)",
                "value": f"{claude:,} / {gemini:,} tokens",
                "baseline": f"{row['as_json']:,} as structured JSON (format json)"
                if row["as_json"]
                else "structured result",
                "target": "",
            }
        )
    return {
        "title": "What the model sees: definitions, instructions, results per client",
        "rows": rows,
        "notes": [
            "Claude Code and Codex forward a result's structuredContent (compact JSON) when present, else its text; "
            "Gemini forwards the text: so the text tools send text only unless format=json",
            "the 1,500-token working set is the demo's; its budget counts the text the model reads",
        ],
        "raw": measured,
    }
