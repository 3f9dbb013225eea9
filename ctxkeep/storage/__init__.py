"""Storage: the only package that talks SQL. Tools use the `Store` interface and the rows; backends are subpackages.

`Store.open(location)` picks the backend (`sqlite/` today). Imports nothing of tools, server, clients or cli.
"""

from ctxkeep.storage.interface import LATEST_SCHEMA, Store, Tx
from ctxkeep.storage.rows import (
    ActionRow,
    CheckpointRow,
    CursorRow,
    DigestRow,
    EvidenceRow,
    MemoryRow,
    NewEvidence,
    SearchFilter,
    SessionRow,
    TaskRow,
    TombstoneRow,
    WorkingSetRow,
)

__all__ = [
    "LATEST_SCHEMA", "ActionRow", "CheckpointRow", "CursorRow", "DigestRow", "EvidenceRow", "MemoryRow", "NewEvidence", "SearchFilter",
    "SessionRow", "Store", "TaskRow", "TombstoneRow", "Tx", "WorkingSetRow",
]
