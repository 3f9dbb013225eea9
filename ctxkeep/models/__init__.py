"""Pydantic models shared by all layers. Import from here: `from ctxkeep.models import TaskState`.

Names are imported on first use, so a module that needs only `ctxkeep.models.common` (the settings, at server
start-up) does not build the checkpoint models.
"""

from __future__ import annotations

import importlib

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import Any

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

_MODULE = {
    **dict.fromkeys(
        [
            "Approval",
            "Change",
            "CheckpointDiffResult",
            "CheckpointListResult",
            "CheckpointLoadResult",
            "CheckpointSaveRequest",
            "CheckpointSaveResult",
            "CheckpointVersion",
            "Dropped",
            "Fact",
            "FailedApproach",
            "Lease",
            "ResumeChecks",
            "TaskState",
            "TaskSummary",
            "Verification",
            "VerifyRequest",
            "VerifyResult",
            "Violation",
        ],
        "checkpoint",
    ),
    **dict.fromkeys(
        [
            "MAX_ITEMS",
            "MAX_NUMBER",
            "MAX_STATE_BYTES",
            "MAX_TASK_ID_CHARS",
            "MAX_TEXT_CHARS",
            "STATE_SCHEMA_VERSION",
            "ItemList",
            "LeaseSeconds",
            "OwnerId",
            "RequiredText",
            "StoredTrigger",
            "StrictModel",
            "TaskId",
            "Text",
            "Timestamp",
            "Trigger",
        ],
        "common",
    ),
}
__all__ = [
    "MAX_ITEMS",
    "MAX_NUMBER",
    "MAX_STATE_BYTES",
    "MAX_TASK_ID_CHARS",
    "MAX_TEXT_CHARS",
    "STATE_SCHEMA_VERSION",
    "Approval",
    "Change",
    "CheckpointDiffResult",
    "CheckpointListResult",
    "CheckpointLoadResult",
    "CheckpointSaveRequest",
    "CheckpointSaveResult",
    "CheckpointVersion",
    "Dropped",
    "Fact",
    "FailedApproach",
    "ItemList",
    "Lease",
    "LeaseSeconds",
    "OwnerId",
    "RequiredText",
    "ResumeChecks",
    "StoredTrigger",
    "StrictModel",
    "TaskId",
    "TaskState",
    "TaskSummary",
    "Text",
    "Timestamp",
    "Trigger",
    "Verification",
    "VerifyRequest",
    "VerifyResult",
    "Violation",
]


def __getattr__(name: str) -> Any:
    module = _MODULE.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxkeep.models' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"ctxkeep.models.{module}"), name)
    globals()[name] = value
    return value
