"""A task bundle as `ctxkeep export` writes it, for `ctxkeep import` to check field by field.

A bundle is untrusted input: every field has the type and the limits a save or a put gives it (the task id a
TaskId, each state a TaskState, each evidence record the fields of an EvidenceItem), and unknown fields are refused.
The bundle's own fields take exactly the JSON types export writes; states are validated as a save validates them.
Times are kept as the text the exporter stored (the round trip is byte for byte), checked to be the form ctxkeep writes.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, ConfigDict, Field

from ctxkeep.models.checkpoint import TaskState
from ctxkeep.models.common import MAX_NUMBER, MAX_TEXT_CHARS, OwnerId, StoredTrigger, StrictModel, TaskId, Text
from ctxkeep.models.evidence import MAX_EVIDENCE_BYTES, EvidenceKind, Tag
from ctxkeep.text import utc_moment

MAX_DIGEST_CHARS = 2_000_000
_STORED_UTC = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$")


def _saved_at(value: str) -> str:
    """A version's time as checkpoint_save writes it: ISO 8601 with its UTC offset."""
    try:
        moment = utc_moment(value)  # a trailing Z too, also on Python 3.10
    except ValueError:
        raise ValueError("not an ISO 8601 time; send the created_at `ctxkeep export` wrote") from None
    if moment.tzinfo is None:
        raise ValueError("a time without a UTC offset; send the created_at `ctxkeep export` wrote")
    return value


def _stored_utc(value: str) -> str:
    """A stored time in the fixed-width UTC form the store compares as text (2026-11-30T12:00:00.000000Z)."""
    try:
        valid = bool(_STORED_UTC.match(value)) and datetime.fromisoformat(value[:-1]) is not None
    except ValueError:
        valid = False
    if not valid:
        raise ValueError("not a time in the form 2026-11-30T12:00:00.000000Z, as `ctxkeep export` writes it")
    return value


def _storable(value: str) -> str:
    """Text any store can hold: no NUL, no lone surrogate."""
    for position, char in enumerate(value):
        if char == "\x00" or "\ud800" <= char <= "\udfff":
            raise ValueError(f"{'NUL' if char == chr(0) else 'a lone surrogate'} at position {position}; send text")
    return value


Hex64 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]
SavedAt = Annotated[str, Field(max_length=64), AfterValidator(_saved_at)]
StoredUtc = Annotated[str, Field(max_length=64), AfterValidator(_stored_utc)]
Count = Annotated[int, Field(ge=0, le=MAX_NUMBER)]


class BundleModel(StrictModel):
    """A part of a bundle: types as `ctxkeep export` writes them (no "3" for 3), unknown fields refused."""

    model_config = ConfigDict(strict=True, extra="forbid", allow_inf_nan=False, defer_build=True)


class BundleViolation(BundleModel):
    """A violation the exporter's store recorded for a version saved without strict checks."""

    rule: Annotated[str, Field(max_length=100)]
    item: Annotated[str, Field(max_length=MAX_TEXT_CHARS * 2)]
    detail: Annotated[str, Field(max_length=MAX_TEXT_CHARS * 2)]


class BundleVersion(BundleModel):
    """One checkpoint version, as the exporter's store holds it."""

    version: Annotated[int, Field(ge=1, le=MAX_NUMBER)]
    hash: Hex64
    parent_hash: Hex64 | None
    state_schema: Annotated[int, Field(ge=1, le=1_000)]
    trigger: StoredTrigger
    goal_change_reason: Text | None
    created_at: SavedAt
    author: OwnerId | None
    owner: OwnerId | None
    took_over: Text | None
    state: TaskState
    violations: Annotated[list[BundleViolation], Field(max_length=10_000)]


class BundleEvidence(BundleModel):
    """One evidence record a state cites: its fields, its content, and the project its ref was computed in."""

    ref: Annotated[str, Field(pattern=r"^ev_[0-9a-f]{24}$")]
    ref_project: Annotated[str, Field(min_length=1, max_length=4_096), AfterValidator(_storable)] | None = Field(
        default=None, description="The project key the ref was computed in (absent: the importing project)."
    )
    kind: EvidenceKind
    source: Text | None
    title: Text | None
    task_id: TaskId | None
    tags: Annotated[list[Tag], Field(max_length=20)]
    effective_at: StoredUtc | None
    expires_at: StoredUtc | None
    created_at: StoredUtc
    bytes: Count
    tokens: Count
    lines: Count
    chunk_chars: Count
    redactions: Count
    sha256: Hex64
    content: Annotated[str, Field(max_length=MAX_EVIDENCE_BYTES), AfterValidator(_storable)]


class BundleDigest(BundleModel):
    """The exporter's history digest of the task and the summary its store accepted: quoted data once imported."""

    digest: Annotated[str, Field(max_length=MAX_DIGEST_CHARS), AfterValidator(_storable)]
    summary: Annotated[str, Field(max_length=MAX_DIGEST_CHARS), AfterValidator(_storable)] | None
    source: Annotated[str, Field(max_length=MAX_TEXT_CHARS * 2), AfterValidator(_storable)]
    updated_at: StoredUtc


class Bundle(BundleModel):
    """A whole bundle: one task's chain, the evidence its states cite, its digest, and the seal over all of it."""

    format: Literal["ctxkeep-bundle"]
    format_version: Literal[1]
    task_id: TaskId
    versions: Annotated[list[BundleVersion], Field(min_length=1)]
    evidence: list[BundleEvidence]
    digest: BundleDigest | None
    bundle_sha256: Hex64
