"""Claude Code sessions seen by the hooks: which task each is bound to (its own `cc-<id>` or the agent's)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ctxkeep.storage.postgres.session import Session
from ctxkeep.storage.rows import InjectionRow, SeenSessionRow, SessionRow, ShownRow
from ctxkeep.storage.shown import SHOWN_KINDS

_KINDS = "(" + ", ".join(f"'{kind}'" for kind in SHOWN_KINDS) + ")"  # constants, not input
_SEEN = (
    "SELECT r.session_id, s.task_id, MIN(r.at), MAX(r.at), "
    f"SUM(CASE WHEN r.kind NOT IN {_KINDS} THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN r.kind = 'injected' THEN 1 ELSE 0 END), SUM(CASE WHEN r.kind = 'offloaded' THEN 1 ELSE 0 END), "
    "SUM(CASE WHEN r.kind = 'blocked' THEN 1 ELSE 0 END) FROM session_records r "
    "LEFT JOIN sessions s ON s.project = r.project AND s.session_id = r.session_id WHERE r.project = $1 "
    "GROUP BY r.session_id, s.task_id ORDER BY MAX(r.at) DESC, r.session_id LIMIT $2"
)
_SHOWN = (
    "SELECT session_id, kind, at, text, status, source, ref FROM (SELECT * FROM session_records "
    f"WHERE project = $1 AND session_id = $2 AND kind IN {_KINDS} "
    "ORDER BY at DESC, kind LIMIT $3) newest ORDER BY at, kind"
)
_COLUMNS = "session_id, task_id, bound, transcript_path, transcript_sha256, updated_at"


def _row(row: Iterable[Any]) -> SessionRow:
    values = list(row)
    return SessionRow(values[0], values[1], bool(values[2]), values[3], values[4], values[5])


class Sessions:
    def __init__(self, session: Session) -> None:
        self._s = session

    async def put(self, project: str, row: SessionRow) -> None:
        conn = await self._s.of(project)
        await conn.execute(
            f"INSERT INTO sessions (project, {_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (project, session_id) "
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
        conn = await self._s.of(project)
        row = await conn.fetchrow(
            f"SELECT {_COLUMNS} FROM sessions WHERE project = $1 AND session_id = $2", project, session_id
        )
        return _row(row) if row else None

    async def latest(self, project: str) -> SessionRow | None:
        conn = await self._s.of(project)
        row = await conn.fetchrow(
            f"SELECT {_COLUMNS} FROM sessions WHERE project = $1 ORDER BY updated_at DESC, session_id LIMIT 1", project
        )
        return _row(row) if row else None

    async def injections(self, project: str, limit: int) -> list[InjectionRow]:
        conn = await self._s.of(project)
        rows = await conn.fetch(
            "SELECT h.session_id, s.task_id, h.injection, COALESCE(s.updated_at, (SELECT MAX(r.at) FROM session_records r "
            "WHERE r.project = h.project AND r.session_id = h.session_id), '') AS seen FROM session_hooks h "
            "LEFT JOIN sessions s ON s.project = h.project AND s.session_id = h.session_id "
            "WHERE h.project = $1 AND h.injection IS NOT NULL AND h.injection <> '' ORDER BY seen DESC, h.session_id LIMIT $2",
            project,
            limit,
        )
        return [InjectionRow(*row) for row in rows]

    async def seen(self, project: str, limit: int) -> list[SeenSessionRow]:
        conn = await self._s.of(project)
        return [SeenSessionRow(*row) for row in await conn.fetch(_SEEN, project, limit)]

    async def shown(self, project: str, session_id: str, limit: int) -> list[ShownRow]:
        conn = await self._s.of(project)
        return [ShownRow(*row) for row in await conn.fetch(_SHOWN, project, session_id, limit)]
