"""build_working_set: its request and result."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from ctxkeep.models.common import Model, StrictModel, TaskId, Text, Timestamp, clean_text

Slot = Literal["policy", "goal", "state", "memory", "history", "evidence", "recent", "next_action", "reserve"]
SLOTS: tuple[Slot, ...] = (
    "policy",
    "goal",
    "state",
    "memory",
    "history",
    "evidence",
    "recent",
    "next_action",
    "reserve",
)
# default share of the budget per slot, in percent (DESIGN.md, adapted from seed 002)
DEFAULT_SHARES: dict[Slot, int] = {
    "policy": 5,
    "goal": 10,
    "state": 13,
    "memory": 5,
    "history": 10,
    "evidence": 38,
    "recent": 10,
    "next_action": 5,
    "reserve": 4,
}
WorkingSetFormat = Literal["markdown", "anthropic", "openai"]
DEFAULT_BUDGET = 8_000
MIN_BUDGET = 200
MAX_BUDGET = 1_000_000  # through the Python API and CLI; MCP callers get at most 25,000
MAX_MCP_BUDGET = 25_000
MAX_POLICY_CHARS = 40_000
MAX_RECENT_MESSAGES = 10_000


class WorkingSetRequest(StrictModel):
    """What to assemble the next step's context for, and within how many tokens."""

    task_id: TaskId
    focus: Text | None = Field(
        default=None,
        description="The question or next action evidence is ranked for; default the checkpoint's next_action.",
    )
    budget_tokens: int = Field(default=DEFAULT_BUDGET, ge=MIN_BUDGET, le=MAX_BUDGET)
    slot_budgets: dict[Slot, Annotated[int, Field(ge=0, le=MAX_BUDGET)]] = Field(
        default_factory=dict,
        description='Hard caps in tokens for some slots, e.g. {"evidence": 2000}; the others share the rest.',
    )
    recent_messages: Annotated[list[dict[str, Any]] | None, Field(max_length=MAX_RECENT_MESSAGES)] = Field(
        default=None,
        description="The messages since your last compression, appended as sent (append-only keeps the cache warm).",
    )
    policy: Annotated[str, Field(max_length=MAX_POLICY_CHARS), AfterValidator(clean_text)] | None = None
    as_of: Timestamp | None = Field(default=None, description="Build as of this time: evidence valid then (RFC 3339).")
    format: WorkingSetFormat = "markdown"

    @model_validator(mode="after")
    def _caps_fit(self) -> WorkingSetRequest:
        named = sum(self.slot_budgets.values())
        if named > self.budget_tokens:
            raise ValueError(
                f"slot_budgets add up to {named} tokens, more than budget_tokens ({self.budget_tokens}); "
                "raise budget_tokens or lower the slot caps"
            )
        return self


class Block(Model):
    """One rendered slot: `stable` blocks change only when the task's state or history changes."""

    slot: Slot
    tokens: int
    hash: str = Field(description="sha256 of the block's text (first 16 hex digits).")
    stable: bool
    items: int = Field(description="How many items (lines, records, messages) the block shows.")


class CacheBreakpoint(Model):
    """Where the stable prefix ends: put a prompt-cache breakpoint on block `block_index` (its last stable block)."""

    block_index: int
    char_offset: int = Field(description="Characters of the rendered text before the end of the stable prefix.")
    token_offset: int


class DroppedItem(Model):
    """Something the budget left out (or cut short): where it would have gone, what it was, why, how to get it."""

    slot: Slot
    item: str
    reason: Literal["budget", "truncated"]
    ref: str | None = None
    why: str = Field(
        default="",
        description="Why it left: the slot's tokens, whether a cap or a short budget set them, and how to get it back.",
    )


class WorkingSetDiff(Model):
    """What changed since the previous working set of the task (seed 002's context diff)."""

    first: bool = Field(description="True when no earlier working set of this task was stored.")
    previous_built_at: str | None = None
    focus_changed: bool = False
    claims_added: list[str] = []
    claims_removed: list[str] = []
    evidence_added: list[str] = []
    evidence_removed: list[str] = []
    more: int = Field(default=0, description="Changes left out of the lists above (each list shows at most 50).")


class CompressAdvice(Model):
    resource: bool = Field(
        description="History and recent messages use over 75% of their budget: compress_history now."
    )
    semantic: bool = Field(
        description="A phase ended (verification passed, approval awaited, subagent returned): checkpoint and compress."
    )
    reason: str


class WorkingSetResult(Model):
    """The assembled context (`text` for markdown, `messages` otherwise) and an account of how it was built."""

    task_id: str
    version: int = Field(description="The checkpoint version the state comes from.")
    focus: str
    format: WorkingSetFormat
    text: str | None = None
    messages: list[dict[str, Any]] | None = None
    blocks: list[Block]
    tokens_total: int = Field(description="Tokens of the rendered output (cl100k_base); never above budget_tokens.")
    budget_tokens: int
    slot_budgets: dict[Slot, int] = Field(description="The tokens each slot was allowed after caps and flows.")
    cache_breakpoint: CacheBreakpoint | None
    evidence_refs: list[str] = Field(
        description="Full refs of the evidence shown, in order (the text shows unique prefixes)."
    )
    memory_ids: list[str] = Field(
        default=[], description="The memories shown in the memory slot (memory_search and memory_forget take them)."
    )
    dropped: list[DroppedItem]
    dropped_more: int = Field(default=0, description="Further dropped or cut items not listed.")
    diff: WorkingSetDiff
    compress_advice: CompressAdvice
