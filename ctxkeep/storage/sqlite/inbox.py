"""Queries over the hooks' evidence inbox: outputs a per-event hook offloaded (redacted, compressed) under the ref the
model was shown, until the evidence store takes them in."""

from __future__ import annotations

from collections.abc import Sequence

import aiosqlite

from ctxkeep.storage.rows import InboxRow


class Inbox:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def waiting(self, project: str) -> bool:
        cursor = await self._conn.execute("SELECT 1 FROM evidence_inbox WHERE project = ? LIMIT 1", (project,))
        return await cursor.fetchone() is not None

    async def take(self, project: str, limit: int) -> list[InboxRow]:
        """The oldest offloads of the project (they stay until `remove`)."""
        cursor = await self._conn.execute(
            "SELECT ref, kind, source, title, task_id, data, redactions, created_at FROM evidence_inbox WHERE project = ? "
            "ORDER BY created_at, ref LIMIT ?",
            (project, limit),
        )
        return [InboxRow(*row) for row in await cursor.fetchall()]

    async def holding(self, project: str, refs: Sequence[str]) -> set[str]:
        """Which of `refs` wait in the project's inbox."""
        found: set[str] = set()
        unique = list(dict.fromkeys(refs))
        for start in range(0, len(unique), 500):
            part = unique[start : start + 500]
            cursor = await self._conn.execute(
                f"SELECT ref FROM evidence_inbox WHERE project = ? AND ref IN ({','.join('?' * len(part))})",
                (project, *part),
            )
            found.update(str(row[0]) for row in await cursor.fetchall())
        return found

    async def remove(self, project: str, refs: Sequence[str]) -> None:
        await self._conn.executemany(
            "DELETE FROM evidence_inbox WHERE project = ? AND ref = ?", [(project, ref) for ref in refs]
        )
