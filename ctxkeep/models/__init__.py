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
    RequiredText,
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
    "ItemList", "RequiredText", "ResumeChecks", "StrictModel", "TaskId", "TaskState", "TaskSummary", "Text",
    "Timestamp", "Trigger", "Verification", "VerifyRequest", "VerifyResult", "Violation",
]
