"""The rows every store returns and takes: plain frozen dataclasses, the same for every backend."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class CheckpointRow:
    task_id: str
    version: int
    hash: str
    parent_hash: str | None
    state_json: str
    state_schema: int
    trigger: str
    goal_change_reason: str | None
    violations_json: str
    created_at: str
    author: str | None = None  # the user who saved it (a shared server's token user); None when local
    owner: str | None = None  # the executor whose lease the version was saved under
    took_over: str | None = None  # the lease this version took over: "<owner> (expired <time>)"


@dataclass(frozen=True)
class TaskRow:
    task_id: str
    latest_version: int
    created_at: str
    updated_at: str
    state_json: str


@dataclass(frozen=True)
class DigestRow:
    task_id: str
    digest: str
    summary: str | None
    source: str
    updated_at: str
    imported_from: str | None = None  # the bundle it came from: quoted data, never checked here (None: made here)


@dataclass(frozen=True)
class CursorRow:
    """How far a source was compressed: its first `prefix_count` messages (hashed) and the refs of their outputs."""

    source: str
    prefix_count: int
    prefix_hash: str
    refs_json: str
    updated_at: str


@dataclass(frozen=True)
class EvidenceFields:
    """What a record says about its content (shared by stored rows and rows about to be stored)."""

    ref: str
    kind: str
    source: str | None
    title: str | None
    task_id: str | None
    tags_json: str
    effective_at: str | None
    expires_at: str | None
    created_at: str
    bytes: int
    tokens: int
    lines: int
    chunk_chars: int
    redactions: int
    index_version: int
    sha256: str


@dataclass(frozen=True)
class EvidenceRow(EvidenceFields):
    """A stored record: its row id and the id of its blob."""

    id: int
    blob_id: int


@dataclass(frozen=True)
class NewEvidence(EvidenceFields):
    """A record ready to store: everything computed, nothing left to decide."""

    data: bytes
    terms: str
    ref_project: str | None = None  # an imported record's ref was computed in this other project (None: this one)


@dataclass(frozen=True)
class SearchFilter:
    task_id: str | None
    kind: str | None
    tags: Sequence[str]
    valid_at: str | None
    exclude_expired_at: str | None
    shared: bool = False  # with task_id: the project's records without a task match too


@dataclass(frozen=True)
class ActionRow:
    idempotency_key: str
    task_id: str
    action: str
    target: str
    params_summary: str | None
    intent_at: str
    status: str
    external_id: str | None
    receipt_ref: str | None
    detail: str | None
    result_at: str | None


@dataclass(frozen=True)
class MemoryRow:
    id: int
    memory_id: str
    key: str
    key_match: str
    kind: str
    content: str
    confidence: float
    source_json: str
    version: int
    created_at: str
    effective_at: str | None
    expires_at: str | None


@dataclass(frozen=True)
class TombstoneRow:
    memory_id: str
    key_sha256: str
    kind: str
    version: int
    created_at: str
    forgotten_at: str
    reason: str | None


@dataclass(frozen=True)
class SessionRow:
    session_id: str
    task_id: str
    bound: bool  # True: the agent saved this task itself (checkpoint_save in the transcript)
    transcript_path: str
    transcript_sha256: str  # of the transcript as last ingested: the same file again is skipped
    updated_at: str


@dataclass(frozen=True)
class InjectionRow:
    """What the hooks injected last into a session's context at its start (`session_hooks.injection`), the task the
    session is bound to (None before it is bound) and when the hooks last saw the session."""

    session_id: str
    task_id: str | None
    text: str
    seen_at: str


@dataclass(frozen=True)
class ShownRow:
    """One entry of a session's log of what the hooks showed the model (`ctxkeep.storage.shown`): its kind
    (`injected`, `offloaded`, `blocked`), when, the text the model got (an injection, a tool output's view, a gate's
    reason), what it was (`label`), the tool it came from (`source`, offloads) and the evidence ref (offloads)."""

    session_id: str
    kind: str
    at: str
    text: str
    label: str
    source: str
    ref: str


@dataclass(frozen=True)
class SeenSessionRow:
    """A session the hooks saw: the task it is bound to (None before a checkpoint binds it), its first and last
    record, how many records it has and how many injections, offloads and gate blocks its log holds."""

    session_id: str
    task_id: str | None
    first_at: str
    last_at: str
    records: int
    injected: int
    offloaded: int
    blocked: int


@dataclass(frozen=True)
class WorkingSetRow:
    """`selection_json`: the evidence picked, in order, with how each was shown (and, under `shown`, the account of
    what was delivered: slots, tokens, refs, memory ids); `claims_json`: the state lines shown;
    `recent_json`: where the kept recent messages started (index and a hash of that message); `memories_json`: the
    memory ids shown."""

    task_id: str
    focus_key: str
    selection_json: str
    claims_json: str
    recent_json: str
    built_at: str
    memories_json: str = "[]"


@dataclass(frozen=True)
class InboxRow:
    """An output a hook offloaded: the ref the model was shown, the record's fields, its redacted text compressed."""

    ref: str
    kind: str
    source: str | None
    title: str | None
    task_id: str | None
    data: bytes
    redactions: int
    created_at: str


@dataclass(frozen=True)
class LeaseRow:
    """Who executes a task now, and until when (RFC 3339 UTC text, compared as text)."""

    task_id: str
    owner: str
    acquired_at: str
    expires_at: str


@dataclass(frozen=True)
class TokenRow:
    """A shared server's user token: only the sha256 of its secret is stored; `projects_json` lists the projects it
    may see."""

    token_id: str
    user: str
    secret_sha256: str
    projects_json: str
    created_at: str
    revoked_at: str | None
