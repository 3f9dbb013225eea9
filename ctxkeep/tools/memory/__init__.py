"""Long-term memory with provenance: write through a gate, search what is in force, forget down to the bytes.

Imports `evidence` (receipts, redaction, search terms), models and storage.
"""

from ctxkeep.tools.memory.forget import memory_forget
from ctxkeep.tools.memory.lookup import memory_get
from ctxkeep.tools.memory.records import claim_prefix, memory_search, memory_write, source_label
from ctxkeep.tools.memory.status import current_by_key, status_of

__all__ = [
    "claim_prefix",
    "current_by_key",
    "memory_forget",
    "memory_get",
    "memory_search",
    "memory_write",
    "source_label",
    "status_of",
]
