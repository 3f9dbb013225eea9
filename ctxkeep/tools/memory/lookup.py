"""One memory by its id, for people (`ctxkeep memory show`, the viewer): its content, provenance and status now."""

from __future__ import annotations

from ctxkeep.errors import NotFound
from ctxkeep.models.memory import Memory
from ctxkeep.text import utc_text
from ctxkeep.tools.memory.records import to_memory
from ctxkeep.tools.memory.status import current_by_key
from ctxkeep.tools.scope import Scope


async def memory_get(scope: Scope, memory_id: str) -> Memory:
    """The memory `memory_id` with its status among its key's versions; raises NotFound when there is no such memory
    (saying when it was forgotten, if it was). Reads only."""
    now = scope.clock()
    async with scope.store.snapshot() as tx:
        rows = await tx.memories.by_ids(scope.project, [memory_id])
        if not rows:
            gone = await tx.memories.tombstones(scope.project, [memory_id])
            if gone:
                reason = f" ({gone[0].reason})" if gone[0].reason else ""
                raise NotFound(
                    f"memory {memory_id!r} was forgotten at {gone[0].forgotten_at[:19]}Z{reason}; only its tombstone is left"
                )
            raise NotFound(f"no memory {memory_id!r} in this project; memory_search lists the memories and their ids")
        versions = await tx.memories.versions(scope.project, [rows[0].key_match])
    return to_memory(rows[0], now, current_by_key(versions, utc_text(now) or ""))
