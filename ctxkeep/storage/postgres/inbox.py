"""Queries over the hooks' evidence inbox: outputs a hook offloaded under the ref the model was shown, until the
evidence store takes them in (with a PostgreSQL store, the hooks' local spool moves its inbox here)."""

from __future__ import annotations

from collections.abc import Sequence

from ctxkeep.storage.postgres.maintenance import Maintenance
from ctxkeep.storage.postgres.session import Session
from ctxkeep.storage.rows import InboxRow


class Inbox:
    def __init__(self, session: Session, maintenance: Maintenance) -> None:
        self._s = session
        self._maintenance = maintenance

    async def waiting(self, project: str) -> bool:
        conn = await self._s.of(project)
        return bool(await conn.fetchval("SELECT EXISTS (SELECT 1 FROM evidence_inbox WHERE project = $1)", project))

    async def take(self, project: str, limit: int) -> list[InboxRow]:
        conn = await self._s.of(project)
        rows = await conn.fetch(
            "SELECT ref, kind, source, title, task_id, data, redactions, created_at FROM evidence_inbox "
            "WHERE project = $1 ORDER BY created_at, ref LIMIT $2",
            project,
            limit,
        )
        return [InboxRow(r[0], r[1], r[2], r[3], r[4], bytes(r[5]), r[6], r[7]) for r in rows]

    async def holding(self, project: str, refs: Sequence[str]) -> set[str]:
        """Which of `refs` wait in the project's inbox."""
        conn = await self._s.of(project)
        rows = await conn.fetch(
            "SELECT ref FROM evidence_inbox WHERE project = $1 AND ref = ANY($2::text[])", project, list(set(refs))
        )
        return {str(r[0]) for r in rows}

    async def remove(self, project: str, refs: Sequence[str]) -> None:
        conn = await self._s.of(project)
        await conn.execute(
            "DELETE FROM evidence_inbox WHERE project = $1 AND ref = ANY($2::text[])", project, list(refs)
        )
