"""The seeds' procurement task as an agent stores it (the records `ctxkeep demo` used to write): Supplier C's mail as
evidence (its portal password redacted), v1 citing it, v2 with the freight item completed, the purchase-order policy
as a memory, and the comparison table's mail journaled with its result. For the tests of the commands and pages that
read such records (journal, memory, working-set allocation)."""

from __future__ import annotations

from typing import Any

import anyio

from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.models.journal import ActionIntentRequest, ActionResultRequest
from ctxkeep.models.memory import MemoryWriteRequest
from ctxkeep.settings import Settings
from ctxkeep.tools.checkpoint import checkpoint_save
from ctxkeep.tools.evidence import evidence_put
from ctxkeep.tools.journal import action_intent, action_result
from ctxkeep.tools.memory import memory_write
from ctxkeep.tools.scope import open_scope

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
INTENT = {
    "task_id": "procurement",
    "idempotency_key": "procurement:comparison-table:send",
    "action": "mail the comparison table",
    "target": "procurement director",
    "params_summary": "20 suppliers, landed cost USD/piece",
}


def with_source(state: dict[str, Any], ref: str) -> dict[str, Any]:
    fact = {**state["facts"][0], "source_ref": ref}
    return {**state, "facts": [fact], "evidence_refs": [ref]}


def store_procurement(env: dict[str, str]) -> str:
    """Write the task `procurement` (v1, then v2), its mail, the policy and the journaled mail into the database and
    project of `env`; returns the mail's ref."""

    async def write() -> str:
        async with open_scope(Settings.from_env(env)) as scope:
            put = await evidence_put(
                scope,
                [
                    EvidenceItem(
                        content=SUPPLIER_MAIL,
                        kind="document",
                        source="mail",
                        title="Supplier C quote v2",
                        task_id="procurement",
                    )
                ],
            )
            ref = str(put.refs[0])
            for version, state in ((None, V1), (1, V2)):
                await checkpoint_save(
                    scope,
                    CheckpointSaveRequest(
                        task_id="procurement",
                        state=TaskState.model_validate(with_source(state, ref)),
                        expected_version=version,
                    ),
                )
            await memory_write(scope, MemoryWriteRequest(**POLICY))
            await action_intent(scope, ActionIntentRequest(**INTENT))
            await action_result(
                scope,
                ActionResultRequest(
                    idempotency_key=INTENT["idempotency_key"], status="succeeded", external_id="mail-20261130-0042"
                ),
            )
            return ref

    return anyio.run(write)
