"""What a stored working set says the model was given: the account `build_working_set` keeps with its selection."""

from __future__ import annotations

from ctxkeep.models.common import Model
from ctxkeep.models.working_set import Block, Slot, WorkingSetFormat


class DeliveredWorkingSet(Model):
    """The last working set built (and recorded) for a task, as delivered: its slots' tokens, the evidence and
    memories it showed. The rendered text is not kept (a forgotten memory or deleted evidence must not live on in it)."""

    task_id: str
    built_at: str
    version: int
    focus: str
    format: WorkingSetFormat
    budget_tokens: int
    tokens_total: int
    slot_budgets: dict[Slot, int]
    blocks: list[Block]
    evidence_refs: list[str]
    memory_ids: list[str]
    state_lines: list[str]
