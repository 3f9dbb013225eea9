"""Task leases (who executes a task now, until when) and a shared server's user tokens (hashed)."""

from __future__ import annotations

from ctxkeep.storage.postgres.session import Session
from ctxkeep.storage.rows import LeaseRow, TokenRow

_TOKEN_COLUMNS = "token_id, user_name, secret_sha256, projects_json, created_at, revoked_at"


class Leases:
    def __init__(self, session: Session) -> None:
        self._s = session

    async def get(self, project: str, task_id: str) -> LeaseRow | None:
        conn = await self._s.of(project)
        row = await conn.fetchrow(
            "SELECT task_id, owner, acquired_at, expires_at FROM task_leases WHERE project = $1 AND task_id = $2",
            project,
            task_id,
        )
        return LeaseRow(*row) if row else None

    async def put(self, project: str, row: LeaseRow) -> None:
        conn = await self._s.of(project)
        await conn.execute(
            "INSERT INTO task_leases (project, task_id, owner, acquired_at, expires_at) VALUES ($1, $2, $3, $4, $5) "
            "ON CONFLICT (project, task_id) DO UPDATE SET owner = excluded.owner, acquired_at = excluded.acquired_at, "
            "expires_at = excluded.expires_at",
            project,
            row.task_id,
            row.owner,
            row.acquired_at,
            row.expires_at,
        )

    async def release(self, project: str, task_id: str, owner: str) -> bool:
        conn = await self._s.of(project)
        status = await conn.execute(
            "DELETE FROM task_leases WHERE project = $1 AND task_id = $2 AND owner = $3", project, task_id, owner
        )
        return bool(status == "DELETE 1")


class Tokens:
    def __init__(self, session: Session) -> None:
        self._s = session

    async def insert(self, row: TokenRow) -> None:
        await self._s.conn.execute(
            f"INSERT INTO api_tokens ({_TOKEN_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6)",
            row.token_id,
            row.user,
            row.secret_sha256,
            row.projects_json,
            row.created_at,
            row.revoked_at,
        )

    async def get(self, token_id: str) -> TokenRow | None:
        row = await self._s.conn.fetchrow(f"SELECT {_TOKEN_COLUMNS} FROM api_tokens WHERE token_id = $1", token_id)
        return TokenRow(*row) if row else None

    async def all(self) -> list[TokenRow]:
        rows = await self._s.conn.fetch(f"SELECT {_TOKEN_COLUMNS} FROM api_tokens ORDER BY created_at, token_id")
        return [TokenRow(*row) for row in rows]

    async def any(self) -> bool:
        return await self._s.conn.fetchval("SELECT EXISTS (SELECT 1 FROM api_tokens)") is True

    async def revoke(self, token_id: str, at: str) -> bool:
        status = await self._s.conn.execute(
            "UPDATE api_tokens SET revoked_at = $1 WHERE token_id = $2 AND revoked_at IS NULL", at, token_id
        )
        return bool(status == "UPDATE 1")
