"""The handoff package (seed 003): what a new owner of a task needs, built from its records."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from ctxkeep.models.checkpoint import Approval, Fact, FailedApproach
from ctxkeep.models.common import Model
from ctxkeep.models.journal import Action


class HandoffPackage(Model):
    task_id: str
    version: int
    saved_at: datetime
    goal: str
    done_criteria: list[str]
    constraints: list[str]
    completed: list[str]
    verification: str | None = Field(description="How the completed work was verified, as the checkpoint records it.")
    remaining: list[str] = Field(
        description="Pending items in priority order (the state's order), then open questions."
    )
    confirmed_facts: list[Fact] = Field(description="Facts with a source.")
    assumptions: list[str] = Field(description="Unverified: the state's assumptions and the facts without a source.")
    failed_approaches: list[FailedApproach]
    artifacts: list[str] = Field(description="Evidence refs the state cites.")
    external_ids: list[str] = Field(
        description="Ids other systems gave this task's side effects, and decided approvals."
    )
    open_intents: list[Action]
    next_action: str | None
    preconditions: list[str] = Field(
        description="What must hold before the next action: approvals to wait for, side effects to check."
    )
    approvals_required: list[Approval]
    warnings: list[str]
