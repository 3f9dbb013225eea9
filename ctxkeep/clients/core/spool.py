"""With a PostgreSQL store, the hooks' local spool and the shared store meet here (in the heavy worker).

Per-event hooks run on the standard library, which cannot talk to PostgreSQL, so they write a local SQLite spool
(`ctxkeep.project.spool_path`): their session records and hook state (which stay there: only this machine's hooks read
them), outputs they offloaded (taken into the shared store as evidence by `take_offloads`, by this worker and by the
MCP server whenever it looks evidence up), and the compaction summaries post-compact keeps. The worker also copies
back what the hooks read from the shared store: the session's binding, its task's latest checkpoint and open intents.
"""

from __future__ import annotations

from ctxkeep.storage import ActionRow, DigestRow, Tx
from ctxkeep.tools.scope import Scope


async def push_summaries(scope: Scope) -> str:
    """Before the worker's steps (so a new digest merges with them as it would in one file): the summaries the hooks
    kept in the spool, into the shared store where newer than what it holds. A note ("" without a spool)."""
    return f"spool: {await _push_summaries(scope)} summary(ies) pushed" if scope.spool is not None else ""


async def copy_back(scope: Scope, session_id: str) -> str:
    """After the worker's steps: the session's binding, its task's latest checkpoint and its journal, from the shared
    store into the spool (what the hooks read). A note ("" without a spool or a binding)."""
    if scope.spool is None:
        return ""
    async with scope.store.snapshot() as tx:
        binding = await tx.sessions.get(scope.project, session_id)
        latest = await tx.checkpoints.get(scope.project, binding.task_id) if binding else None
        intents = await tx.journal.for_task(scope.project, binding.task_id) if binding else []
    if binding is None:
        return ""
    async with scope.spool.transaction() as spool:
        await spool.sessions.put(scope.project, binding)
        if (
            latest is not None
            and await spool.checkpoints.get(scope.project, binding.task_id, latest[0].version) is None
        ):
            await spool.checkpoints.insert(scope.project, latest[0])
        await _copy_intents(spool, scope.project, intents)
    return f"spool: {binding.task_id} v{latest[0].version if latest else 0} copied back"


async def _push_summaries(scope: Scope) -> int:
    """The summaries post-compact kept in the spool, into the shared store where newer than what it holds."""
    assert scope.spool is not None
    async with scope.spool.snapshot() as spool:
        kept = [row for row in await spool.digests.all(scope.project) if row.summary]
    pushed = 0
    async with scope.store.transaction() as tx:
        for row in kept:
            held = await tx.digests.get(scope.project, row.task_id)
            if held is not None and held.imported_from is not None:
                held = None  # a bundle's digest gives way to what this machine made
            if held is not None and (
                held.summary == row.summary or (held.summary is not None and held.updated_at >= row.updated_at)
            ):
                continue
            await tx.digests.put(
                scope.project,
                DigestRow(
                    row.task_id,
                    held.digest if held else row.digest,
                    row.summary,
                    held.source if held else row.source,
                    max(held.updated_at, row.updated_at) if held else row.updated_at,
                ),
            )
            pushed += 1
    return pushed


async def _copy_intents(spool: Tx, project: str, intents: list[ActionRow]) -> None:
    for intent in intents:
        mine = await spool.journal.get(project, intent.idempotency_key)
        if mine is None:
            await spool.journal.insert_intent(project, intent)
            mine = await spool.journal.get(project, intent.idempotency_key)
        if mine is not None and mine.status == "open" and intent.status != "open":
            await spool.journal.set_result(project, intent)


async def spool_notes(scope: Scope, session_id: str | None = None) -> list[str]:
    """A worker step: `push_summaries` (no session id) or `copy_back`; its note, or what failed (the other steps stand)."""
    try:
        note = await (push_summaries(scope) if session_id is None else copy_back(scope, session_id))
    except Exception as exc:
        return [f"syncing the hooks' spool failed: {type(exc).__name__}: {str(exc)[:200]}"]
    return [note] if note else []
