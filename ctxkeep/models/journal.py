"""The action journal: intent before an external side effect, result after (seed 003).

A resumed agent that finds an intent without a result cannot know whether the side effect
happened; it must look the idempotency key up in the system of record before retrying.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from ctxkeep.models.common import Model, RequiredText, StrictModel, TaskId, Text

ActionStatus = Literal["succeeded", "failed", "cancelled"]
IdempotencyKey = Annotated[
    RequiredText,
    Field(max_length=200, description="One key per side effect, made from task, object and step: 'task:object:step'."),
]


class ActionIntentRequest(StrictModel):
    task_id: TaskId
    idempotency_key: IdempotencyKey
    action: RequiredText = Field(description="What will be done, e.g. 'send refund'.")
    target: RequiredText = Field(description="What it is done to, e.g. 'order 8812'.")
    params_summary: Text | None = Field(
        default=None, description="The parameters that matter (amounts, recipients); secrets are redacted."
    )


class ActionResultRequest(StrictModel):
    idempotency_key: IdempotencyKey
    status: ActionStatus
    external_id: Text | None = Field(
        default=None, description="The id the external system gave the effect (refund id, message id)."
    )
    receipt_ref: Text | None = Field(
        default=None, description="An evidence ref holding the receipt (evidence_put it first)."
    )
    detail: Text | None = None


class Action(Model):
    """One journal entry: an intent and, once recorded, its result (`status` 'open' until then)."""

    idempotency_key: str
    task_id: str
    action: str
    target: str
    params_summary: str | None
    intent_at: datetime
    status: Literal["open", "succeeded", "failed", "cancelled"]
    external_id: str | None = None
    receipt_ref: str | None = None
    detail: str | None = None
    result_at: datetime | None = None


class ActionIntentResult(Model):
    entry: Action
    recorded: bool = Field(description="False when this intent was already in the journal (nothing new was written).")
    advice: str


class ActionResultResult(Model):
    entry: Action
    recorded: bool = Field(description="False when this same result was already recorded.")
