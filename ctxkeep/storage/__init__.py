"""Storage: the only package that talks SQL. `Store` is the entry point."""

from ctxkeep.storage.checkpoints import CheckpointRow, TaskRow
from ctxkeep.storage.db import Store, Tx
from ctxkeep.storage.digests import CursorRow, DigestRow
from ctxkeep.storage.evidence import EvidenceRow, NewEvidence, SearchFilter
from ctxkeep.storage.journal import ActionRow
from ctxkeep.storage.memories import MemoryRow, TombstoneRow
from ctxkeep.storage.sessions import SessionRow
from ctxkeep.storage.working_sets import WorkingSetRow

__all__ = ["ActionRow", "MemoryRow", "SessionRow", "TombstoneRow", "CheckpointRow", "CursorRow", "DigestRow", "EvidenceRow", "NewEvidence", "SearchFilter", "Store", "TaskRow", "Tx", "WorkingSetRow"]
