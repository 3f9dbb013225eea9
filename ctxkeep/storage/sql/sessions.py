"""Claude Code sessions seen by the hooks: which task each is bound to (its own `cc-<id>` or the agent's)."""

from __future__ import annotations

from ctxkeep.storage.rows import InjectionRow, SeenSessionRow, SessionRow, ShownRow
from ctxkeep.storage.shown import SHOWN_KINDS
from ctxkeep.storage.sql.db import Db, Row

_KINDS = "(" + ", ".join(f"'{kind}'" for kind in SHOWN_KINDS) + ")"  # constants, not input
_SEEN = (
    "SELECT r.session_id, s.task_id, MIN(r.at), MAX(r.at), "
    f"SUM(CASE WHEN r.kind NOT IN {_KINDS} THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN r.kind = 'injected' THEN 1 ELSE 0 END), SUM(CASE WHEN r.kind = 'offloaded' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN r.kind = 'blocked' THEN 1 ELSE 0 END) FROM session_records r "
    "LEFT JOIN sessions s ON s.project = r.project AND s.session_id = r.session_id WHERE r.project = ? "
    "GROUP BY r.session_id, s.task_id ORDER BY MAX(r.at) DESC, r.session_id LIMIT ?"
)
_SHOWN = (
    "SELECT session_id, kind, at, text, status, source, ref FROM (SELECT * FROM session_records "
    f"WHERE project = ? AND session_id = ? AND kind IN {_KINDS} "
    "ORDER BY at DESC, kind LIMIT ?) newest ORDER BY at, kind"
)
_COLUMNS = "session_id, task_id, bound, transcript_path, transcript_sha256, updated_at"


def _row(row: Row) -> SessionRow:
    return SessionRow(row[0], row[1], bool(row[2]), row[3], row[4], row[5])


class Sessions:
    def __init__(self, db: Db) -> None:
        self._db = db

    async def put(self, project: str, row: SessionRow) -> None:
        await self._db.execute(
            f"INSERT INTO sessions (project, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project, session_id) "
            "DO UPDATE SET task_id = excluded.task_id, bound = excluded.bound, transcript_path = excluded.transcript_path, "
            "transcript_sha256 = excluded.transcript_sha256, updated_at = excluded.updated_at",
            project,
            row.session_id,
            row.task_id,
            int(row.bound),
            row.transcript_path,
            row.transcript_sha256,
            row.updated_at,
        )

    async def get(self, project: str, session_id: str) -> SessionRow | None:
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM sessions WHERE project = ? AND session_id = ?", project, session_id
        )
        return _row(row) if row else None

    async def latest(self, project: str) -> SessionRow | None:
        """The session the hooks saw last in this project."""
        row = await self._db.fetchrow(
            f"SELECT {_COLUMNS} FROM sessions WHERE project = ? ORDER BY updated_at DESC, session_id LIMIT 1", project
        )
        return _row(row) if row else None

    async def injections(self, project: str, limit: int) -> list[InjectionRow]:
        """The last injection of each session that had one, the sessions seen most recently first (ties by id): seen
        is when the session was last bound, else its newest record."""
        rows = await self._db.fetch(
            "SELECT h.session_id, s.task_id, h.injection, COALESCE(s.updated_at, (SELECT MAX(r.at) FROM session_records r "
            "WHERE r.project = h.project AND r.session_id = h.session_id), '') AS seen FROM session_hooks h "
            "LEFT JOIN sessions s ON s.project = h.project AND s.session_id = h.session_id "
            "WHERE h.project = ? AND h.injection IS NOT NULL AND h.injection <> '' ORDER BY seen DESC, h.session_id LIMIT ?",
            project,
            limit,
        )
        return [InjectionRow(*row) for row in rows]

    async def seen(self, project: str, limit: int) -> list[SeenSessionRow]:
        return [SeenSessionRow(*row) for row in await self._db.fetch(_SEEN, project, limit)]

    async def shown(self, project: str, session_id: str, limit: int) -> list[ShownRow]:
        return [ShownRow(*row) for row in await self._db.fetch(_SHOWN, project, session_id, limit)]
