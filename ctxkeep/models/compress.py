"""compress_history: its request and result."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from ctxkeep.models.checkpoint import Verification
from ctxkeep.models.common import Model, StrictModel, TaskId

HistoryFormat = Literal["openai", "anthropic", "generic", "claude_code"]
MAX_INLINE_TOKENS = 25_000
MAX_TRANSCRIPT_CHARS = 64 * 1024 * 1024  # as much as a request may carry


class CompressRequest(StrictModel):
    messages: Annotated[list[dict[str, Any]] | None, Field(max_length=100_000)] = None
    transcript_path: Annotated[str | None, Field(max_length=4_096)] = None
    transcript: Annotated[str | None, Field(max_length=MAX_TRANSCRIPT_CHARS)] = None
    format: HistoryFormat | None = Field(default=None, description="Detected when omitted.")
    task_id: TaskId | None = None
    keep_recent: int = Field(default=8, ge=0, le=10_000)
    shape_window: int = Field(default=4, ge=0, le=10_000)
    digest_tokens: int = Field(default=1_000, ge=100, le=20_000)
    summary: Annotated[str | None, Field(max_length=200_000)] = None

    @model_validator(mode="after")
    def _one_source(self) -> CompressRequest:
        sources = [self.messages, self.transcript_path, self.transcript]
        if sum(source is not None for source in sources) != 1:
            raise ValueError(
                "send one of messages (a list), transcript (the text of a Claude Code .jsonl transcript) or "
                "transcript_path (such a file where the server runs)"
            )
        return self


class SemanticBoundary(Model):
    kind: Literal["verification_passed", "approval_requested", "subagent_returned", "phase_completed"]
    message_index: int
    detail: str


class CompressResult(Model):
    format: HistoryFormat
    messages: list[dict[str, Any]] | None = Field(
        description="The compressed history in the input's shape (a transcript comes back Anthropic-shaped); null when stored as messages_ref."
    )
    messages_ref: str | None = Field(
        description="Evidence ref of the compressed messages (JSON) when they exceed 25,000 tokens."
    )
    digest: str
    evidence_refs: list[str] = Field(description="Refs of every tool output offloaded, in history order.")
    tokens_before: int
    tokens_after: int
    span_tokens_before: int = Field(
        description="Tokens of the compressible span: all but the pinned messages and the recent band."
    )
    span_tokens_after: int
    bands: dict[str, list[int]] = Field(
        description="Input message indexes [first, last] of pinned, digest, shaped and recent (empty when a band is empty)."
    )
    skipped_records: int = Field(
        description="Transcript records skipped as not part of the conversation (progress, snapshots, partial lines)."
    )
    summary_request: str
    verification: Verification | None = None
    semantic_boundary: SemanticBoundary | None = None
