"""The hooks' evidence inbox: outputs a per-event hook offloaded (redacted, compressed) under the ref the model was
shown, until the evidence store takes them in (with a PostgreSQL store, the hooks' local spool holds its own)."""

from __future__ import annotations

from collections.abc import Sequence

from ctxkeep.storage.rows import InboxRow
from ctxkeep.storage.sql.db import Db


class Inbox:
    def __init__(self, db: Db) -> None:
        self._db = db

    async def waiting(self, project: str) -> bool:
        return await self._db.fetchrow("SELECT 1 FROM evidence_inbox WHERE project = ? LIMIT 1", project) is not None

    async def take(self, project: str, limit: int) -> list[InboxRow]:
        """The oldest offloads of the project (they stay until `remove`)."""
        rows = await self._db.fetch(
            "SELECT ref, kind, source, title, task_id, data, redactions, created_at FROM evidence_inbox "
            "WHERE project = ? ORDER BY created_at, ref LIMIT ?",
            project,
            limit,
        )
        return [InboxRow(r[0], r[1], r[2], r[3], r[4], bytes(r[5]), r[6], r[7]) for r in rows]

    async def holding(self, project: str, refs: Sequence[str]) -> set[str]:
        """Which of `refs` wait in the project's inbox."""
        found: set[str] = set()
        unique = list(dict.fromkeys(refs))
        for start in range(0, len(unique), 500):  # under SQLite's limit of bound parameters
            part = unique[start : start + 500]
            rows = await self._db.fetch(
                f"SELECT ref FROM evidence_inbox WHERE project = ? AND ref IN ({', '.join('?' * len(part))})",
                project,
                *part,
            )
            found.update(str(row[0]) for row in rows)
        return found

    async def remove(self, project: str, refs: Sequence[str]) -> None:
        await self._db.executemany(
            "DELETE FROM evidence_inbox WHERE project = ? AND ref = ?", [(project, ref) for ref in refs]
        )
