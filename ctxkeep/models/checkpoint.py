"""The task state and the checkpoint tools' inputs and outputs."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from ctxkeep.models.common import (
    MAX_ITEMS,
    MAX_NUMBER,
    MAX_STATE_BYTES,
    ItemList,
    LeaseSeconds,
    Model,
    OwnerId,
    RequiredText,
    StoredTrigger,
    StrictModel,
    TaskId,
    Text,
    Timestamp,
    Trigger,
)
from ctxkeep.models.journal import Action
from ctxkeep.text import canonical_json, find_bad_character, match_key


class Dropped(StrictModel):
    """An item that leaves the state on purpose, and why."""

    kind: Literal["pending", "completed", "constraint", "decision", "fact", "approval"]
    item: RequiredText = Field(description="The item's text; for a fact its key, for an approval its id.")
    reason: RequiredText


class Fact(StrictModel):
    """A value stored exactly (amount, id, date, state), never paraphrased."""

    key: RequiredText
    value: str | int | float
    unit: Text | None = None
    source_ref: Text | None = Field(
        default=None, description="Where the value comes from (evidence ref, URL, file:line)."
    )
    critical: bool = Field(default=True, description="Critical facts must appear verbatim in summaries.")

    def line(self) -> str:
        """How the fact reads on one line of a brief, working set or handoff."""
        unit = f" {self.unit}" if self.unit else ""
        source = f" (source: {self.source_ref})" if self.source_ref else ""
        return f"{self.key} = {self.value}{unit}{source}"


class FailedApproach(StrictModel):
    approach: RequiredText
    reason: RequiredText


class Approval(StrictModel):
    """A human decision the task waits for or obtained; its action and amount are fixed."""

    id: RequiredText
    action: RequiredText
    target: Text | None = None
    amount: int | float | None = None
    currency: Text | None = None
    reason: Text | None = None
    status: Literal["pending", "approved", "rejected"] = "pending"
    approver: Text | None = None
    requested_at: Timestamp | None = None
    decided_at: Timestamp | None = None

    def line(self) -> str:
        """How the approval reads on one line: status, id, action, target, amount, approver, reason."""
        parts = [f"[{self.status}] {self.id}: {self.action}"]
        if self.target:
            parts.append(f"on {self.target}")
        if self.amount is not None:
            parts.append(f"amount {self.amount}{' ' + self.currency if self.currency else ''}")
        if self.approver:
            parts.append(f"approver {self.approver}")
        if self.reason:
            parts.append(f"({self.reason})")
        return " ".join(parts)


def _unique_by(items: list[Any], key: str, what: str) -> None:
    seen: set[str] = set()
    for item in items:
        name = match_key(getattr(item, key))
        if name in seen:
            raise ValueError(f"two {what} share the {key} {getattr(item, key)!r}; send one per {key}")
        seen.add(name)


class TaskState(StrictModel):
    """What an agent must not forget about a task: saved whole as one checkpoint version."""

    goal: RequiredText
    done_criteria: ItemList = []
    constraints: ItemList = []
    plan: ItemList = []
    completed: ItemList = []
    pending: ItemList = []
    dropped: Annotated[list[Dropped], Field(max_length=MAX_ITEMS)] = []
    decisions: ItemList = []
    facts: Annotated[list[Fact], Field(max_length=MAX_ITEMS)] = []
    assumptions: ItemList = []
    failed_approaches: Annotated[list[FailedApproach], Field(max_length=MAX_ITEMS)] = []
    open_questions: ItemList = []
    approvals: Annotated[list[Approval], Field(max_length=MAX_ITEMS)] = []
    verification_state: Text | None = None
    next_action: Text | None = None
    phase: Text | None = None
    evidence_refs: ItemList = []
    extra: dict[str, Any] = Field(default_factory=dict, description="Free JSON for anything else.")

    @model_validator(mode="after")
    def _check_whole(self) -> TaskState:
        _unique_by(self.facts, "key", "facts")
        _unique_by(self.approvals, "id", "approvals")
        size = len(self.canonical().encode("utf-8", "surrogatepass"))
        if size > MAX_STATE_BYTES:
            raise ValueError(
                f"state is {size:,} bytes of JSON, over the {MAX_STATE_BYTES:,} limit; move raw "
                "output to evidence and keep references, or drop finished items"
            )
        try:
            extra = json.dumps(self.extra, allow_nan=False, ensure_ascii=False)
        except ValueError:
            raise ValueError(
                "extra holds NaN or Infinity, which JSON cannot carry; send finite numbers or strings"
            ) from None
        bad = find_bad_character(extra)
        if bad:
            raise ValueError(f"extra holds a {bad}; send plain text")
        return self

    def canonical(self) -> str:
        """The state as deterministic JSON: the bytes that are hashed and stored."""
        return canonical_json(self.model_dump(mode="json"))


class Violation(Model):
    """One broken verification rule: `rule` is a fixed id, `item` the text it concerns."""

    rule: str
    item: str
    detail: str


class Verification(Model):
    ok: bool
    violations: list[Violation]


class CheckpointSaveRequest(StrictModel):
    task_id: TaskId
    state: TaskState
    expected_version: int | None = Field(default=None, ge=0, le=MAX_NUMBER)
    trigger: Trigger = "manual"
    strict: bool = True
    goal_change_reason: Text | None = None
    owner: OwnerId | None = Field(default=None, description="Claim (or renew) the task's lease as this owner.")
    lease_seconds: LeaseSeconds | None = Field(
        default=None, description="With owner: how long the lease lasts (default 600)."
    )


class Lease(Model):
    """Who executes the task, until when; `live` is false once it expired (another owner may take it over)."""

    owner: str
    acquired_at: datetime
    expires_at: datetime
    live: bool


class CheckpointVersion(Model):
    """Which stored version this is: its place in the task's hash chain."""

    task_id: str
    version: int
    hash: str = Field(description="sha256 over parent_hash, task_id, version and the canonical state JSON.")
    parent_hash: str | None = Field(description="The previous version's hash; null for version 1.")
    created_at: datetime
    trigger: StoredTrigger


class CheckpointSaveResult(CheckpointVersion):
    """The stored version (or the existing one, when the same state was sent again) and its verification."""

    verification: Verification


class ResumeChecks(Model):
    """What a restarted agent must know before acting on a loaded checkpoint."""

    schema_version: int
    schema_compatible: bool
    saved_at: datetime
    age_seconds: int
    is_latest: bool
    latest_version: int
    saved_with_violations: int = Field(description="Violations accepted by a non-strict save of this version.")
    pending_approvals: list[Approval]
    open_intents: list[Action] = Field(
        default=[],
        description="Side effects of this task recorded as intended but without a result: "
        "look each key up in the system of record before retrying.",
    )
    evidence_expired: list[str] = Field(default=[], description="Evidence refs the state cites that have expired.")
    evidence_missing: list[str] = Field(
        default=[], description="Evidence refs the state cites that are no longer stored."
    )
    memories_expired: list[str] = Field(
        default=[],
        description="Memories the task relied on (cited in the state or shown in its "
        "last working set) that are expired, superseded or forgotten.",
    )
    lease: Lease | None = Field(default=None, description="Who executes the task now and until when (null: no lease).")
    warnings: list[str]


class CheckpointLoadResult(CheckpointVersion):
    """A stored version with what a resuming agent reads first."""

    author: str | None = Field(default=None, description="The user who saved it (on a shared server).")
    owner: str | None = Field(default=None, description="The lease owner it was saved under.")
    took_over: str | None = Field(default=None, description="The expired lease this version took over.")
    state: TaskState
    brief: str
    resume_checks: ResumeChecks


class TaskSummary(Model):
    task_id: str
    latest_version: int
    updated_at: datetime
    goal: str
    phase: str | None
    pending: int
    pending_approvals: int


class CheckpointListResult(Model):
    tasks: list[TaskSummary]
    next_cursor: str | None = Field(
        default=None, description="Send it as `cursor` for the next page; null on the last page."
    )


class Change(Model):
    """One difference between two versions: `field` of TaskState, `op` what happened."""

    field: str
    op: Literal["added", "removed", "changed"]
    item: str
    before: Any = None
    after: Any = None


class CheckpointDiffResult(Model):
    task_id: str
    from_version: int
    to_version: int
    changes: list[Change]


class VerifyRequest(StrictModel):
    """Two stored versions of a task, two states to compare, or a state and a free-text summary of it."""

    task_id: TaskId | None = None
    from_version: int | None = Field(default=None, ge=1, le=MAX_NUMBER)
    to_version: int | None = Field(default=None, ge=1, le=MAX_NUMBER)
    before: TaskState | None = None
    after: TaskState | None = None
    goal_change_reason: Text | None = None
    state: TaskState | None = None
    summary: Annotated[str | None, Field(max_length=200_000)] = None

    @model_validator(mode="after")
    def _one_form(self) -> VerifyRequest:
        forms = {
            "stored": (self.task_id, self.from_version, self.to_version),
            "states": (self.before, self.after),
            "summary": (self.state, self.summary),
        }
        complete = [name for name, values in forms.items() if all(v is not None for v in values)]
        touched = [name for name, values in forms.items() if any(v is not None for v in values)]
        if len(complete) == 1 and touched == complete:
            return self
        raise ValueError(
            "send exactly one of: task_id + from_version + to_version (two stored versions), before + after "
            "(two task states), or state + summary (a free-text summary checked against its state)"
        )


class VerifyResult(Model):
    ok: bool
    violations: list[Violation]
