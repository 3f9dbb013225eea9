"""The compaction check: does a summary carry what the records say must survive?

One checker for every summary ctxkeep reads (`check`): compress_history's `summary`, a client's own compaction
summary and the hooks' repair. Standard library only: the hooks import it.
"""

from ctxkeep.tools.compaction_check.check import Finding, Item, Passages, carrying_passage, check_summary

__all__ = ["Finding", "Item", "Passages", "carrying_passage", "check_summary"]
