"""Storage: the only package that talks SQL. `Store` is the entry point."""

from ctxkeep.storage.checkpoints import CheckpointRow, TaskRow
from ctxkeep.storage.db import Store

__all__ = ["CheckpointRow", "Store", "TaskRow"]
