"""Pydantic models shared by all layers. Import from here: `from ctxkeep.models import TaskState`."""

from ctxkeep.models.checkpoint import (
    Approval,
    Change,
    CheckpointDiffResult,
    CheckpointListResult,
    CheckpointLoadResult,
    CheckpointSaveRequest,
    CheckpointSaveResult,
    CheckpointVersion,
    Dropped,
    Fact,
    FailedApproach,
    Lease,
    ResumeChecks,
    TaskState,
    TaskSummary,
    Verification,
    VerifyRequest,
    VerifyResult,
    Violation,
)
from ctxkeep.models.common import (
    MAX_ITEMS,
    MAX_NUMBER,
    MAX_STATE_BYTES,
    MAX_TASK_ID_CHARS,
    MAX_TEXT_CHARS,
    STATE_SCHEMA_VERSION,
    ItemList,
    LeaseSeconds,
    OwnerId,
    RequiredText,
    StoredTrigger,
    StrictModel,
    TaskId,
    Text,
    Timestamp,
    Trigger,
)

__all__ = [
    "MAX_ITEMS", "MAX_NUMBER", "MAX_STATE_BYTES", "MAX_TASK_ID_CHARS", "MAX_TEXT_CHARS", "STATE_SCHEMA_VERSION",
    "Approval", "Change", "CheckpointDiffResult", "CheckpointListResult", "CheckpointLoadResult",
    "CheckpointSaveRequest", "CheckpointSaveResult", "CheckpointVersion", "Dropped", "Fact", "FailedApproach",
    "ItemList", "Lease", "LeaseSeconds", "OwnerId", "RequiredText", "ResumeChecks", "StoredTrigger", "StrictModel", "TaskId",
    "TaskState", "TaskSummary", "Text", "Timestamp", "Trigger", "Verification", "VerifyRequest", "VerifyResult", "Violation",
]
