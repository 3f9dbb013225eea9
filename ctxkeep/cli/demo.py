"""`ctxkeep demo`: the procurement example from the seeds, end to end over real stdio.

It starts `ctxkeep serve` as a subprocess on a temporary database, talks to it with the MCP
SDK client, and shows a verified save, a refused save that silently lost a pending item,
the corrected save, the resume brief a restarted agent would read, and the evidence behind a
fact: stored once (secrets redacted), found by search, brought back line by line. Then a
policy remembered with its provenance (and a guess refused), a side effect journaled before it
happens, and the next step's context rebuilt from all of it within 1,500 tokens. Run again on the same database
(`--db`), it uses a task of its own (`procurement-2`, …), so every step behaves the same.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ctxkeep.tokens import encoding_name

GOAL = "Compare the 20 supplier quotes and prepare a purchase recommendation"
CONSTRAINT = "No final recommendation before the data is complete"
PENDING = "Supplier C freight missing"

V1: dict[str, Any] = {
    "goal": GOAL,
    "done_criteria": [
        "All 20 quotes normalized to USD/piece incl. freight",
        "Recommendation approved by the procurement director",
    ],
    "constraints": [CONSTRAINT, "Do not contact suppliers on behalf of the buyer"],
    "plan": ["Collect quotes", "Normalize prices", "Compare landed cost", "Recommend"],
    "completed": ["Collected 20 quotes", "Normalized 19 quotes to USD/piece"],
    "pending": [PENDING],
    "decisions": ["Normalize all prices to USD/piece"],
    "facts": [
        {
            "key": "Supplier C freight",
            "value": 0.48,
            "unit": "USD/piece",
            "source_ref": "mail from Supplier C (quote v2)",
        }
    ],
    "approvals": [
        {
            "id": "PO-7731",
            "action": "issue purchase order",
            "target": "winning supplier",
            "amount": 184300,
            "currency": "USD",
            "status": "pending",
            "reason": "waiting for the procurement director",
        }
    ],
    "phase": "normalize",
    "next_action": "Ask the buyer to confirm Supplier C freight in writing",
}
SUPPLIER_MAIL = """From: sales@supplier-c.example
Subject: Re: quote v2, freight

Hello, please find our updated quote below.
Unit price: 2.15 USD/piece (MOQ 10,000)
Freight: 0.48 USD/piece, DAP Rotterdam
Lead time: 21 days
Portal access for your team: https://buyer:Winter2026!@portal.supplier-c.example/quotes
Regards, Supplier C sales
"""


def _with_source(state: dict[str, Any], ref: str) -> dict[str, Any]:
    fact = {**state["facts"][0], "source_ref": ref}
    return {**state, "facts": [fact], "evidence_refs": [ref]}


# What an untrusted summarizer wrote: the freight fact looked known, so the pending item vanished.
LOSSY = {**V1, "pending": [], "next_action": "Compare landed cost"}
V2 = {
    **V1,
    "pending": [],
    "completed": [*V1["completed"], PENDING],
    "phase": "compare",
    "next_action": "Compare landed cost across all 20 suppliers",
}
POLICY = {
    "kind": "project_policy",
    "key": "purchase order approval",
    "review_status": "approved",
    "owner": "procurement director",
    "content": "Purchase orders over 100,000 USD need the procurement director's written approval",
    "effective_at": "2026-01-01T00:00:00Z",
}
GUESS = {"kind": "speculation", "key": "director mood", "content": "The director will probably approve PO-7731 quickly"}
INTENT = {
    "task_id": "procurement",
    "idempotency_key": "procurement:comparison-table:send",
    "action": "mail the comparison table",
    "target": "procurement director",
    "params_summary": "20 suppliers, landed cost USD/piece",
}


TASK = "procurement"


async def _own_task(client: Client) -> tuple[str, str]:
    """The demo's task id for this run: `procurement`, or `procurement-2`, `-3`, … when earlier runs on this database
    left those; and how to say it."""
    for n in range(1, 10_000):
        task = TASK if n == 1 else f"{TASK}-{n}"
        found = await client.call_tool("checkpoint_load", {"task_id": task})
        if found.is_error and f"no task {task!r}" in _text(found):
            return (
                task,
                ""
                if n == 1
                else f" ({TASK}{'' if n == 2 else f' to {TASK}-{n - 1}'} {'is' if n == 2 else 'are'} there from an earlier run)",
            )
    raise RuntimeError("no free task id for the demo")


def _say(title: str, body: str) -> None:
    print(f"\n== {title}\n{body}")


def _text(result: Any) -> str:
    text = "\n".join(block.text for block in result.content if hasattr(block, "text"))
    return ("REFUSED (tool error): " if result.is_error else "") + text


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    return _text(await client.call_tool(tool, arguments))


async def run_demo(db: str | None = None, project: str | None = None) -> int:
    """Run the demo (on a temporary database and project unless given); returns the exit code (0: all as expected)."""
    with tempfile.TemporaryDirectory(prefix="ctxkeep-demo-") as tmp:
        path = db or str(Path(tmp) / "demo.db")
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "ctxkeep", "serve"],
            env={"CTXKEEP_DB": path, "CTXKEEP_PROJECT": project or tmp},
        )
        async with Client(params) as client:
            task, again = await _own_task(client)  # a second run on the same database gets a task of its own
            print(f"ctxkeep demo: database {path}, task {task}{again}, tokenizer {encoding_name()}")
            intent = {**INTENT, "task_id": task, "idempotency_key": f"{task}:comparison-table:send"}
            tools = await client.list_tools()
            _say("server over stdio", "tools: " + ", ".join(t.name for t in tools.tools))
            mail = await client.call_tool(
                "evidence_put",
                {
                    "content": SUPPLIER_MAIL,
                    "kind": "document",
                    "source": "mail",
                    "title": "Supplier C quote v2",
                    "task_id": task,
                },
            )
            ref = mail.structured_content["ref"]
            _say("store Supplier C's mail as evidence (the password in the link is redacted)", _text(mail))
            v1, lossy, v2 = (_with_source(state, ref) for state in (V1, LOSSY, V2))
            _say(
                "save v1: the procurement task, its freight fact citing the mail",
                await _call(client, "checkpoint_save", {"task_id": task, "state": v1}),
            )
            refused = await _call(client, "checkpoint_save", {"task_id": task, "state": lossy, "expected_version": 1})
            _say("save a summary that silently dropped the pending item", refused)
            saved = await _call(
                client, "checkpoint_save", {"task_id": task, "state": v2, "expected_version": 1, "trigger": "semantic"}
            )
            _say("save the corrected v2 (pending item moved to completed)", saved)
            _say(
                "diff v1 -> v2",
                await _call(client, "checkpoint_diff", {"task_id": task, "from_version": 1, "to_version": 2}),
            )
            flipped = {
                **v2,
                "constraints": ["Final recommendation before the data is complete is fine", V1["constraints"][1]],
            }
            _say(
                "verify a state whose constraint lost its negation",
                await _call(client, "verify_checkpoint", {"before": v2, "after": flipped}),
            )
            _say(
                "a restarted agent loads the task: resume brief",
                await _call(client, "checkpoint_load", {"task_id": task}),
            )
            found = await _call(
                client, "evidence_search", {"query": "where does the freight of Supplier C come from?", "task_id": task}
            )
            _say('"where does 0.48 come from?" - search the evidence', found)
            line = await _call(client, "evidence_get", {"ref": ref, "mode": "grep", "pattern": "Freight", "context": 0})
            _say("bring back exactly the line", line)
            _say(
                "remember an approved policy, with its owner and effective date",
                await _call(client, "memory_write", POLICY),
            )
            guess = await _call(client, "memory_write", GUESS)
            _say("try to remember a guess", guess)
            _say("journal a side effect before performing it", await _call(client, "action_intent", intent))
            working = await client.call_tool(
                "build_working_set",
                {"task_id": task, "budget_tokens": 1_500, "format": "json", "focus": "Supplier C freight per piece"},
            )
            blocks = ", ".join(f"{b['slot']} {b['tokens']}" for b in working.structured_content["blocks"])
            _say(f"the next step's context, rebuilt within 1,500 tokens ({blocks})", _text(working))
            result = await _call(
                client,
                "action_result",
                {
                    "idempotency_key": intent["idempotency_key"],
                    "status": "succeeded",
                    "external_id": "mail-20261130-0042",
                },
            )
            _say("record the side effect's result (a resumed agent will not send it twice)", result)
        ok = (
            refused.startswith("REFUSED")
            and "pending_unaccounted" in refused
            and f"saved {task} v2" in saved
            and ref in found
            and "0.48 USD/piece" in line
            and working.structured_content["tokens_total"] <= 1_500
            and "0.48" in _text(working)
            and guess.startswith("REFUSED")
            and "written approval" in _text(working)
            and intent["idempotency_key"] in _text(working)
            and result.startswith("recorded")
        )
        print("demo finished: " + ("every step behaved as expected" if ok else "UNEXPECTED RESULT, see above"))
        return 0 if ok else 1
