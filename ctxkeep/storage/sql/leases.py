"""Task leases (who executes a task now, until when) and a shared server's user tokens (hashed)."""

from __future__ import annotations

from ctxkeep.storage.rows import LeaseRow, TokenRow
from ctxkeep.storage.sql.db import Db

_TOKEN_COLUMNS = "token_id, user_name, secret_sha256, projects_json, created_at, revoked_at"


class Leases:
    def __init__(self, db: Db) -> None:
        self._db = db

    async def get(self, project: str, task_id: str) -> LeaseRow | None:
        row = await self._db.fetchrow(
            "SELECT task_id, owner, acquired_at, expires_at FROM task_leases WHERE project = ? AND task_id = ?",
            project,
            task_id,
        )
        return LeaseRow(*row) if row else None

    async def put(self, project: str, row: LeaseRow) -> None:
        await self._db.execute(
            "INSERT INTO task_leases (project, task_id, owner, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (project, task_id) DO UPDATE SET owner = excluded.owner, acquired_at = excluded.acquired_at, "
            "expires_at = excluded.expires_at",
            project,
            row.task_id,
            row.owner,
            row.acquired_at,
            row.expires_at,
        )

    async def release(self, project: str, task_id: str, owner: str) -> bool:
        return (
            await self._db.execute(
                "DELETE FROM task_leases WHERE project = ? AND task_id = ? AND owner = ?", project, task_id, owner
            )
            == 1
        )


class Tokens:
    def __init__(self, db: Db) -> None:
        self._db = db

    async def insert(self, row: TokenRow) -> None:
        await self._db.execute(
            f"INSERT INTO api_tokens ({_TOKEN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
            row.token_id,
            row.user,
            row.secret_sha256,
            row.projects_json,
            row.created_at,
            row.revoked_at,
        )

    async def get(self, token_id: str) -> TokenRow | None:
        row = await self._db.fetchrow(f"SELECT {_TOKEN_COLUMNS} FROM api_tokens WHERE token_id = ?", token_id)
        return TokenRow(*row) if row else None

    async def all(self) -> list[TokenRow]:
        rows = await self._db.fetch(f"SELECT {_TOKEN_COLUMNS} FROM api_tokens ORDER BY created_at, token_id")
        return [TokenRow(*row) for row in rows]

    async def any(self) -> bool:
        return await self._db.fetchrow("SELECT 1 FROM api_tokens LIMIT 1") is not None

    async def revoke(self, token_id: str, at: str) -> bool:
        return (
            await self._db.execute(
                "UPDATE api_tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at IS NULL", at, token_id
            )
            == 1
        )
