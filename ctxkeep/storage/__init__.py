"""Storage: the only package that talks SQL. `Store` is the entry point."""

from ctxkeep.storage.sqlite.checkpoints import CheckpointRow, TaskRow
from ctxkeep.storage.sqlite.db import Store, Tx
from ctxkeep.storage.sqlite.digests import CursorRow, DigestRow
from ctxkeep.storage.sqlite.evidence import EvidenceRow, NewEvidence, SearchFilter
from ctxkeep.storage.sqlite.journal import ActionRow
from ctxkeep.storage.sqlite.memories import MemoryRow, TombstoneRow
from ctxkeep.storage.sqlite.sessions import SessionRow
from ctxkeep.storage.sqlite.working_sets import WorkingSetRow

__all__ = ["ActionRow", "MemoryRow", "SessionRow", "TombstoneRow", "CheckpointRow", "CursorRow", "DigestRow", "EvidenceRow", "NewEvidence", "SearchFilter", "Store", "TaskRow", "Tx", "WorkingSetRow"]
