"""Task leases (who executes a task now, until when) and a shared server's user tokens (hashed)."""

from __future__ import annotations

import aiosqlite

from ctxkeep.storage.rows import LeaseRow, TokenRow

_TOKEN_COLUMNS = "token_id, user_name, secret_sha256, projects_json, created_at, revoked_at"


class Leases:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def get(self, project: str, task_id: str) -> LeaseRow | None:
        cursor = await self._conn.execute(
            "SELECT task_id, owner, acquired_at, expires_at FROM task_leases WHERE project = ? AND task_id = ?",
            (project, task_id),
        )
        row = await cursor.fetchone()
        return LeaseRow(*row) if row else None

    async def put(self, project: str, row: LeaseRow) -> None:
        await self._conn.execute(
            "INSERT INTO task_leases (project, task_id, owner, acquired_at, expires_at) VALUES (?, ?, ?, ?, ?) "
            "ON CONFLICT (project, task_id) DO UPDATE SET owner = excluded.owner, acquired_at = excluded.acquired_at, "
            "expires_at = excluded.expires_at",
            (project, row.task_id, row.owner, row.acquired_at, row.expires_at),
        )

    async def release(self, project: str, task_id: str, owner: str) -> bool:
        cursor = await self._conn.execute(
            "DELETE FROM task_leases WHERE project = ? AND task_id = ? AND owner = ?", (project, task_id, owner)
        )
        return cursor.rowcount == 1


class Tokens:
    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn

    async def insert(self, row: TokenRow) -> None:
        await self._conn.execute(
            f"INSERT INTO api_tokens ({_TOKEN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
            (row.token_id, row.user, row.secret_sha256, row.projects_json, row.created_at, row.revoked_at),
        )

    async def get(self, token_id: str) -> TokenRow | None:
        cursor = await self._conn.execute(f"SELECT {_TOKEN_COLUMNS} FROM api_tokens WHERE token_id = ?", (token_id,))
        row = await cursor.fetchone()
        return TokenRow(*row) if row else None

    async def all(self) -> list[TokenRow]:
        cursor = await self._conn.execute(f"SELECT {_TOKEN_COLUMNS} FROM api_tokens ORDER BY created_at, token_id")
        return [TokenRow(*row) for row in await cursor.fetchall()]

    async def any(self) -> bool:
        cursor = await self._conn.execute("SELECT 1 FROM api_tokens LIMIT 1")
        return await cursor.fetchone() is not None

    async def revoke(self, token_id: str, at: str) -> bool:
        cursor = await self._conn.execute(
            "UPDATE api_tokens SET revoked_at = ? WHERE token_id = ? AND revoked_at IS NULL", (at, token_id)
        )
        return cursor.rowcount == 1
