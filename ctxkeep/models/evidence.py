"""Evidence: raw tool output, files and documents taken out of the context, retrievable by ref."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field, model_validator

from ctxkeep.models import common
from ctxkeep.models.common import MAX_NUMBER, Model, StrictModel, TaskId, Text, Timestamp

MAX_EVIDENCE_BYTES = common.MAX_EVIDENCE_BYTES  # kept in common, where the settings read it without these models
MAX_BATCH_ITEMS = 1_000
MAX_BATCH_BYTES = 64 * 1024 * 1024
DEFAULT_READ_TOKENS = 6_000
MAX_READ_TOKENS = 25_000

EvidenceKind = Literal["tool_result", "file", "web", "document", "message", "note", "transcript"]
GetMode = Literal["full", "head", "tail", "lines", "grep", "chunk"]
Ref = Annotated[
    str, Field(min_length=4, max_length=64, pattern=r"^ev_[0-9a-f]+$", description="An evidence ref, e.g. 'ev_3f2a…'.")
]


def _utf8_text(value: str) -> str:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ValueError(
            f"content is not valid UTF-8 text (lone surrogate at position {exc.start}); send text, or "
            "base64-encode binary data and say so in the title (e.g. 'image/png, base64')"
        ) from None
    return value


def _tag(value: str) -> str:
    value = value.strip()
    if not value or any(c.isspace() for c in value):
        raise ValueError("tags are single words without spaces, e.g. 'build' or 'supplier-c'")
    return value


Tag = Annotated[str, Field(max_length=64), AfterValidator(_tag)]


class EvidenceItem(StrictModel):
    """One piece of raw content to store: its text and where it came from."""

    content: Annotated[str, AfterValidator(_utf8_text)] = Field(
        description="The raw text (tool output, file, page). Secrets are redacted unless redact=false."
    )
    kind: EvidenceKind = "tool_result"
    source: Text | None = Field(
        default=None, description="Tool name, file path or URL it came from, e.g. 'Bash' or 'src/app.py'."
    )
    title: Text | None = None
    task_id: TaskId | None = None
    tags: Annotated[list[Tag], Field(max_length=20)] = []
    effective_at: Timestamp | None = Field(default=None, description="From when it is valid (RFC 3339).")
    expires_at: Timestamp | None = Field(
        default=None, description="When it stops being valid; expired items are not searched by default."
    )
    redact: bool = Field(
        default=True, description="Replace secrets (keys, tokens, passwords) with a marker before storing."
    )

    @model_validator(mode="after")
    def _window(self) -> EvidenceItem:
        if self.effective_at and self.expires_at and self.expires_at <= self.effective_at:
            raise ValueError("expires_at must be later than effective_at")
        return self


class EvidenceStored(Model):
    """What was stored for one item: send `preview` + `ref` to the model instead of the raw content."""

    ref: str
    bytes: int = Field(description="UTF-8 size of the stored (redacted) content.")
    tokens: int
    lines: int
    preview: str = Field(description="A short, deterministic view of the content (shaped by kind and source tool).")
    redactions: int = Field(description="How many secrets were replaced by a [REDACTED:…] marker.")
    deduplicated: bool = Field(
        description="True when an identical record existed: its ref is returned, its tags gain the new ones and its validity window is the new one's."
    )


class EvidencePutResult(Model):
    """A single put fills ref … deduplicated; a batch put fills refs (input order) and items."""

    ref: str | None = None
    bytes: int | None = None
    tokens: int | None = None
    lines: int | None = None
    preview: str | None = None
    redactions: int | None = None
    deduplicated: bool | None = None
    refs: list[str] | None = None
    items: list[EvidenceStored] | None = None


class EvidenceBatchResult(Model):
    refs: list[str] = Field(description="One ref per input item, in input order.")
    items: list[EvidenceStored]


class EvidenceGetRequest(StrictModel):
    ref: Ref
    mode: GetMode = "full"
    n: int = Field(default=50, ge=1, le=100_000, description="head/tail: number of lines.")
    start: int | None = Field(default=None, ge=1, le=MAX_NUMBER, description="lines (and grep): first line, 1-based.")
    end: int | None = Field(default=None, ge=1, le=MAX_NUMBER, description="lines (and grep): last line, inclusive.")
    pattern: str | None = Field(
        default=None, min_length=1, max_length=500, description="grep: a Python regular expression."
    )
    context: int = Field(default=2, ge=0, le=50, description="grep: lines of context around each match.")
    chunk: int | None = Field(default=None, ge=0, le=MAX_NUMBER, description="chunk: which chunk, 0-based.")
    max_tokens: int = Field(default=DEFAULT_READ_TOKENS, ge=100, le=MAX_READ_TOKENS)

    @model_validator(mode="after")
    def _mode_arguments(self) -> EvidenceGetRequest:
        if self.mode == "grep" and self.pattern is None:
            raise ValueError("mode 'grep' needs a pattern")
        if self.mode == "chunk" and self.chunk is None:
            raise ValueError("mode 'chunk' needs chunk (0-based)")
        if self.start is not None and self.end is not None and self.end < self.start:
            raise ValueError(f"end ({self.end}) is before start ({self.start}); send start <= end")
        return self


class EvidenceContent(Model):
    ref: str
    mode: GetMode
    content: str
    truncated: bool = Field(description="True when more content matches than was returned.")
    total_tokens: int
    total_lines: int
    total_chunks: int
    returned_tokens: int
    next: dict[str, Any] | None = Field(
        description="Arguments for the evidence_get call that returns the rest; null when nothing is left."
    )
    kind: str
    source: str | None
    title: str | None


class EvidenceSearchRequest(StrictModel):
    query: Annotated[str, Field(min_length=1, max_length=2_000)]
    task_id: TaskId | None = None
    kind: EvidenceKind | None = None
    tags: Annotated[list[Tag], Field(max_length=20)] = []
    as_of: Timestamp | None = Field(
        default=None, description="Only items valid at this time (effective_at <= as_of < expires_at)."
    )
    include_expired: bool = False
    limit: int = Field(default=10, ge=1, le=50)
    max_tokens: int = Field(
        default=DEFAULT_READ_TOKENS, ge=100, le=MAX_READ_TOKENS, description="Hits stop before this many tokens."
    )


class EvidenceHit(Model):
    ref: str
    title: str | None
    snippet: str
    rank: int = Field(default=1, description="1 for the best hit.")
    score: float = Field(description="Relevance relative to the best hit: 1.0 for it, (0, 1] for the others.")
    kind: str
    source: str | None
    task_id: str | None
    tokens: int
    created_at: datetime


class EvidenceSearchResult(Model):
    hits: list[EvidenceHit]
    truncated: bool = Field(
        default=False, description="True when more hits matched than fit max_tokens; raise it or narrow the query."
    )


class EvidenceDeleteResult(Model):
    ref: str
    deleted: bool
    blob_removed: bool = Field(
        description="True when no other record used the same content, so the content itself was erased."
    )
    wal_truncated: bool = Field(
        default=True,
        description="False when another reader kept old pages in the WAL; they are erased at the next checkpoint.",
    )


class EvidenceGcResult(Model):
    deleted: list[str] = Field(description="Expired refs that were deleted.")
    kept_cited: list[str] = Field(description="Expired refs kept because a task's latest checkpoint cites them.")
    orphan_blobs_removed: int
