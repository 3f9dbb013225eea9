"""Long-term memory: the write gate's inputs, stored memories, search and forget.

A memory outlives its task, so every write must say where it comes from (seed 002's provenance
gate): each kind names the fields it needs, and a guess (`speculation`) is never stored.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field, model_validator

from ctxkeep.models import common
from ctxkeep.models.common import MAX_NUMBER, Model, RequiredText, StrictModel, TaskId, Text, Timestamp

MemoryKind = Literal["user_preference", "task_fact", "project_policy", "skill", "speculation"]
StoredKind = Literal["user_preference", "task_fact", "project_policy", "skill"]
MemoryStatus = Literal["current", "superseded", "expired", "scheduled"]
# which memory of a key is current: the more authoritative kind first, then the newer (documented in docs/tools.md)
AUTHORITY: dict[str, int] = {"project_policy": 3, "user_preference": 2, "task_fact": 1, "skill": 1}
MAX_KEY_CHARS = 200
DEFAULT_TTL_DAYS = common.DEFAULT_TTL_DAYS  # kept in common, where the settings read it without these models

MemoryKey = Annotated[
    RequiredText,
    Field(
        max_length=MAX_KEY_CHARS,
        description="What the memory is about, e.g. 'report-format'; one current memory per key.",
    ),
]


class MemoryWriteRequest(StrictModel):
    """A memory to store, with the provenance its kind requires:

    user_preference: explicit_confirmation=true and source_message_id (TTL 180 days);
    task_fact: evidence_ref or task_id + source_version (TTL 7 days);
    project_policy: review_status='approved', effective_at and owner (no TTL);
    skill: task_id, the task it was learned from (TTL 90 days); speculation: refused.
    """

    kind: MemoryKind
    key: MemoryKey
    content: RequiredText
    confidence: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="How sure the source is, 0 to 1; below 0.5 it is speculation and refused.",
    )
    explicit_confirmation: bool = Field(
        default=False, description="user_preference: the user stated or confirmed it in so many words."
    )
    source_message_id: Text | None = Field(
        default=None, description="user_preference: the id of the user's message that says it."
    )
    evidence_ref: Text | None = Field(
        default=None, description="task_fact: the stored evidence (tool receipt) it comes from."
    )
    task_id: TaskId | None = Field(
        default=None, description="skill: the task it was learned from; task_fact: with source_version."
    )
    source_version: int | None = Field(
        default=None, ge=1, le=MAX_NUMBER, description="task_fact: the checkpoint version of task_id that records it."
    )
    review_status: Literal["draft", "in_review", "approved", "rejected"] | None = Field(
        default=None, description="project_policy: must be 'approved'."
    )
    effective_at: Timestamp | None = Field(
        default=None, description="project_policy: when it takes effect (not current before)."
    )
    owner: Text | None = Field(default=None, description="project_policy: who owns it.")
    expires_at: Timestamp | None = Field(default=None, description="Overrides the kind's default lifetime.")


class MemorySource(Model):
    """Where a memory comes from (the fields its kind required, and any others that were sent)."""

    explicit_confirmation: bool = False
    source_message_id: str | None = None
    evidence_ref: str | None = None
    task_id: str | None = None
    source_version: int | None = None
    review_status: str | None = None
    owner: str | None = None


class Memory(Model):
    """One stored version of a memory. `forget` says how to take it back."""

    memory_id: str
    key: str
    kind: StoredKind
    content: str
    confidence: float
    source: MemorySource
    version: int = Field(description="Its place in the key's history, 1 for the first write of the key.")
    created_at: datetime
    effective_at: datetime | None
    expires_at: datetime | None
    status: MemoryStatus = Field(
        description="current (in force), superseded (history), expired, or scheduled (effective later)."
    )
    age_seconds: int
    forget: str = Field(description="The call that removes it.")


class MemoryConflict(Model):
    """A write whose content differs from the key's current memory: both are kept, one is current."""

    key: str
    previous: str = Field(description="The memory that was current before the write.")
    written: str
    current: str = Field(description="The memory current after the write.")
    reason: str


class MemoryWriteResult(Model):
    memory: Memory
    deduplicated: bool = Field(
        description="The same memory from the same source was already stored; nothing new was written."
    )
    redactions: int = Field(
        default=0, description="Secrets replaced by [REDACTED:kind] in the key and content before storing."
    )
    current: Memory | None = Field(
        description="The key's current memory after the write (the written one unless a more "
        "authoritative one stands); null when none is in force (expired, or effective later)."
    )
    conflict: MemoryConflict | None


class MemorySearchRequest(StrictModel):
    query: Text | None = Field(default=None, description="Words to look for; omit to list the newest.")
    kind: StoredKind | None = None
    key: MemoryKey | None = None
    include_history: bool = Field(default=False, description="Also superseded, expired and scheduled versions.")
    as_of: Timestamp | None = Field(default=None, description="Judge expiry and effect at this time (default now).")
    limit: int = Field(default=20, ge=1, le=200)


class MemorySearchResult(Model):
    memories: list[Memory]
    not_shown: int = Field(
        description="Matching versions left out because they are not current (include_history shows them)."
    )


class MemoryForgetRequest(StrictModel):
    """Exactly one of memory_id (that version) or key (every version of the key)."""

    memory_id: Text | None = None
    key: MemoryKey | None = None
    reason: Text | None = Field(default=None, description="Kept in the tombstone; do not repeat the content here.")

    @model_validator(mode="after")
    def _one_target(self) -> MemoryForgetRequest:
        if (self.memory_id is None) == (self.key is None):
            raise ValueError(
                "send exactly one of memory_id (forget that version) or key (forget every version of the key)"
            )
        return self


class Tombstone(Model):
    """What was forgotten and when; never the content."""

    memory_id: str
    kind: str
    version: int
    created_at: datetime
    forgotten_at: datetime
    reason: str | None


class MemoryForgetResult(Model):
    forgotten: list[Tombstone]
    already_forgotten: bool = Field(default=False, description="An earlier call forgot it; these are its tombstones.")
    working_sets_cleared: int = Field(
        description="Cached working sets that showed it: the lines quoting it are removed (its id "
        "stays, so a resumed task learns it relied on a memory that is gone)."
    )
    digests_scrubbed: int = Field(description="History digests and summaries that quoted it, with the quote replaced.")
    still_quoted_in: list[str] = Field(
        description="Records that still hold the text and are not derived from the memory: evidence "
        "refs (evidence_delete them) and checkpoint versions ('task vN', immutable: save a "
        "new version without the text; the old ones stay in the task's history)."
    )
    wal_cleared: bool = Field(
        description="The write-ahead log was checkpointed and truncated, so no old copy of a page survives there."
    )
