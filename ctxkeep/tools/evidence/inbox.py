"""The hooks' offloaded outputs taken into the evidence store, under the refs the model was shown.

A per-event hook cannot load the store (it runs on the standard library on every tool call), so it keeps each
offloaded output, already redacted, in an inbox with the ref `evidence_put` will give it. Whoever opens the store next
for evidence — `evidence_get` that misses a ref, `evidence_search`, `build_working_set`, the pre-compact worker —
takes the inbox in first; a running MCP server also takes it in after it starts and after any tool call, in the
background (`ctxkeep.server.offloads`).
"""

from __future__ import annotations

import zlib

from ctxkeep.errors import InvalidInput
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.storage import Store
from ctxkeep.tools.evidence.records import evidence_put
from ctxkeep.tools.scope import Scope

BATCH = 200


async def take_offloads(scope: Scope) -> int:
    """Store every offloaded output of this project as evidence; how many were taken in (0 when none waited). With a
    PostgreSQL store the hooks offload into their local spool (`scope.spool`), taken in too. Raises InvalidInput when
    a stored ref differs from the one the hook computed (the model could not fetch it)."""
    taken = await _take(scope, scope.store)
    return taken + (await _take(scope, scope.spool) if scope.spool is not None else 0)


async def _take(scope: Scope, inbox: Store) -> int:
    taken = 0
    while True:
        async with inbox.snapshot() as tx:
            rows = await tx.inbox.take(scope.project, BATCH) if await tx.inbox.waiting(scope.project) else []
        if not rows:
            return taken
        items = [
            EvidenceItem(
                content=zlib.decompress(r.data).decode("utf-8"),
                kind=r.kind,  # type: ignore[arg-type]
                source=r.source,
                title=r.title,
                task_id=r.task_id,
                redact=False,
            )
            for r in rows
        ]
        stored = await evidence_put(scope, items)
        wrong = [(row.ref, ref) for row, ref in zip(rows, stored.refs, strict=True) if row.ref != ref]
        if wrong:
            raise InvalidInput(
                f"offloaded output {wrong[0][0]} was stored as {wrong[0][1]}; the hooks' refs and "
                "evidence_put disagree (a ctxkeep bug: please report it)"
            )
        async with inbox.transaction() as tx:
            await tx.inbox.remove(scope.project, [row.ref for row in rows])
        taken += len(rows)
