"""The SQL of the client hooks' fast path, on the standard library's sqlite3 (no aiosqlite, asyncio or pydantic).

Per-event hooks run as new processes on every tool call and prompt, so they open the file directly, read and write the
session records, the per-session hook state and the evidence inbox in short transactions, and return. The file is
opened, checked and migrated by the Store's own opener (`opener.py`); one written by a newer ctxkeep or by another
program is refused. Errors surface as `sqlite3.Error`, `OSError` or the opener's StorageError: the hook logs them and
passes through.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Sequence

from ctxkeep.storage.shown import KEEP_SHOWN, SHOWN_KINDS
from ctxkeep.storage.sqlite.folders import create_private_file
from ctxkeep.storage.sqlite.opener import open_database

RecordRow = tuple[str, str, str, str, str, str, str]  # kind, key, text, at, status, source, ref
ShownEntry = tuple[str, str, str, str, str, str]  # kind, at, text, label, source, ref
_HOOK_FIELDS = (
    "generation",
    "injection",
    "injection_generation",
    "transcript_size",
    "transcript_mtime_ns",
    "worker_pid",
    "worker_started_at",
    "worker_done_at",
    "worker_note",
    "gate_blocked_at",
    "last_stop_at",
)


class _Batch:
    """`SqliteHotSession.batch` (a class, not contextlib's decorator: contextlib costs a hook process its import)."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._outer = False

    def __enter__(self) -> None:
        self._outer = not self._conn.in_transaction
        if self._outer:
            self._conn.execute("BEGIN IMMEDIATE")

    def __exit__(self, kind: object, error: object, trace: object) -> None:
        if not self._outer:
            return
        if kind is not None:
            self._conn.execute("ROLLBACK")
            return
        try:
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise


InboxRow = tuple[
    str, str, str | None, str | None, str | None, bytes, int, str
]  # ref, kind, source, title, task, data, …


def open_session(
    path: str | os.PathLike[str], project: str, session_id: str, busy_timeout_ms: int = 5_000
) -> SqliteHotSession:
    """A session on the file at `path` (created 0600 in 0700 folders when absent, opened and migrated as the Store
    opens it: `opener.open_database`)."""
    if not os.path.exists(path):
        create_private_file(path)
    return SqliteHotSession(open_database(path, busy_timeout_ms), project, session_id)


class SqliteHotSession:
    """One session's records, hook state and offloads in one SQLite file (`ctxkeep.storage.hook_store.HotSession`)."""

    def __init__(self, conn: sqlite3.Connection, project: str, session_id: str) -> None:
        self._conn = conn
        self.project = project
        self.session_id = session_id

    def close(self) -> None:
        self._conn.close()

    def put_records(self, rows: Iterable[RecordRow]) -> int:
        """Upsert records (the latest write of a kind and key wins; the same record again refreshes its time, so a
        repeated test run counts when it ran last); bumps the session's generation when any changed. Returns how many
        changed."""
        changed = 0
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            for row in rows:
                cursor = self._conn.execute(
                    "INSERT INTO session_records (project, session_id, kind, key, text, at, status, source, ref) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (project, session_id, kind, key) DO UPDATE SET "
                    "text = excluded.text, at = excluded.at, status = excluded.status, source = excluded.source, "
                    "ref = excluded.ref WHERE at < excluded.at OR (at = excluded.at AND (text, status, source, ref) IS NOT "
                    "(excluded.text, excluded.status, excluded.source, excluded.ref))",
                    (self.project, self.session_id, *row),
                )
                changed += cursor.rowcount
            if changed:
                self._bump()
            self._conn.execute("COMMIT")
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        return changed

    def keep(self, key: str, text: str, at: str) -> None:
        """Keep the hooks' own bookkeeping under `key` (a `hook` record, which no view reads): the generation stays,
        so a view cached for the session's records is still good."""
        self._conn.execute(
            "INSERT OR REPLACE INTO session_records (project, session_id, kind, key, text, at, status, source, ref) "
            "VALUES (?, ?, 'hook', ?, ?, ?, '', '', '')",
            (self.project, self.session_id, key, text, at),
        )

    def _bump(self) -> None:
        self._conn.execute(
            "INSERT INTO session_hooks (project, session_id, generation) VALUES (?, ?, 1) "
            "ON CONFLICT (project, session_id) DO UPDATE SET generation = generation + 1",
            (self.project, self.session_id),
        )

    def records(self, kinds: Sequence[str] = ()) -> list[RecordRow]:
        """The session's records (of `kinds` when given), oldest first; never the log of what the model was shown
        (`ctxkeep.storage.shown`)."""
        where, params = "project = ? AND session_id = ?", [self.project, self.session_id]
        chosen = [kind for kind in kinds if kind not in SHOWN_KINDS]
        if kinds and not chosen:
            return []
        if chosen:
            where += f" AND kind IN ({','.join('?' * len(chosen))})"
            params += chosen
        else:
            where += f" AND kind NOT IN ({','.join('?' * len(SHOWN_KINDS))})"
            params += list(SHOWN_KINDS)
        return self._conn.execute(
            f"SELECT kind, key, text, at, status, source, ref FROM session_records WHERE {where} "
            "ORDER BY at, kind, key",
            params,
        ).fetchall()

    def other_sessions(self, since: str, limit: int = 3) -> list[tuple[str, str]]:
        """(session id, time of its latest record) of this project's other sessions with a record since `since`,
        the most recent first."""
        return self._conn.execute(
            "SELECT session_id, max(at) AS last FROM session_records WHERE project = ? AND session_id != ? AND "
            f"kind NOT IN ('hook', {','.join('?' * len(SHOWN_KINDS))}) GROUP BY session_id HAVING last >= ? "
            "ORDER BY last DESC LIMIT ?",
            (self.project, self.session_id, *SHOWN_KINDS, since, limit),
        ).fetchall()

    def records_of(self, session_id: str) -> list[RecordRow]:
        """Another session's records of this project, oldest first."""
        return self._conn.execute(
            "SELECT kind, key, text, at, status, source, ref FROM session_records WHERE project = ? AND "
            f"session_id = ? AND kind NOT IN ({','.join('?' * len(SHOWN_KINDS))}) ORDER BY at, kind, key",
            (self.project, session_id, *SHOWN_KINDS),
        ).fetchall()

    def recent_tasks(self, since: str, limit: int = 5) -> list[tuple[str, int, str, str]]:
        """(task id, version, state JSON, saved at) of this project's tasks saved since `since`, the most recent
        first."""
        return self._conn.execute(
            "SELECT t.task_id, c.version, c.state_json, t.updated_at FROM tasks t JOIN checkpoints c ON "
            "c.project = t.project AND c.task_id = t.task_id AND c.version = t.latest_version "
            "WHERE t.project = ? AND t.updated_at >= ? ORDER BY t.updated_at DESC LIMIT ?",
            (self.project, since, limit),
        ).fetchall()

    def batch(self) -> _Batch:
        """The single-statement writes inside (hook state, the log of what was shown, the inbox) as one transaction:
        one commit instead of one each. Commits are the Store's (WAL, synchronous NORMAL: a killed process loses
        nothing committed, the file stays whole; a power cut may lose the last commits, never corrupt the file)."""
        return _Batch(self._conn)

    def log_shown(self, kind: str, text: str, at: str, label: str, source: str, ref: str) -> None:
        """Log what the model was shown (`kind` one of SHOWN_KINDS): not a record, so the generation stays; only the
        newest KEEP_SHOWN entries of the kind stay."""
        if kind not in SHOWN_KINDS:
            raise ValueError(f"not a kind of what the model was shown: {kind!r} (one of {', '.join(SHOWN_KINDS)})")
        key = (self.project, self.session_id, kind)
        with self.batch():
            self._conn.execute(
                "INSERT OR REPLACE INTO session_records (project, session_id, kind, key, text, at, status, source, ref) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*key, at, text, at, label, source, ref),
            )
            self._conn.execute(
                "DELETE FROM session_records WHERE project = ? AND session_id = ? AND kind = ? AND key NOT IN "
                "(SELECT key FROM session_records WHERE project = ? AND session_id = ? AND kind = ? "
                "ORDER BY key DESC LIMIT ?)",
                (*key, *key, KEEP_SHOWN),
            )

    def relabel_last_shown(self, kind: str, label: str) -> None:
        """Change the label of the newest logged entry of `kind` (what a later step of the same hook learned)."""
        self._conn.execute(
            "UPDATE session_records SET status = ? WHERE project = ? AND session_id = ? AND kind = ? AND key = "
            "(SELECT MAX(key) FROM session_records WHERE project = ? AND session_id = ? AND kind = ?)",
            (label, self.project, self.session_id, kind, self.project, self.session_id, kind),
        )

    def shown(self) -> list[ShownEntry]:
        """The session's log of what the model was shown, oldest first: (kind, at, text, label, source, ref)."""
        return self._conn.execute(
            f"SELECT kind, at, text, status, source, ref FROM session_records WHERE project = ? AND session_id = ? "
            f"AND kind IN ({','.join('?' * len(SHOWN_KINDS))}) ORDER BY at, kind",
            (self.project, self.session_id, *SHOWN_KINDS),
        ).fetchall()

    def hook_state(self) -> dict[str, object]:
        """The session's hook state (every field None or 0 for a session not seen yet)."""
        row = self._conn.execute(
            f"SELECT {', '.join(_HOOK_FIELDS)} FROM session_hooks WHERE project = ? AND session_id = ?",
            (self.project, self.session_id),
        ).fetchone()
        return (
            dict(zip(_HOOK_FIELDS, row, strict=True))
            if row
            else {name: 0 if name == "generation" else None for name in _HOOK_FIELDS}
        )

    def set_hook_state(self, **fields: object) -> None:
        """Set fields of the session's hook state (the generation only changes with the records)."""
        unknown = set(fields) - set(_HOOK_FIELDS) | ({"generation"} & set(fields))
        if unknown:
            raise ValueError(f"not hook state fields: {sorted(unknown)}")
        columns = list(fields)
        self._conn.execute(
            f"INSERT INTO session_hooks (project, session_id, {', '.join(columns)}) VALUES (?, ?, {', '.join('?' * len(columns))}) "
            f"ON CONFLICT (project, session_id) DO UPDATE SET {', '.join(f'{c} = excluded.{c}' for c in columns)}",
            (self.project, self.session_id, *fields.values()),
        )

    def inbox_put(
        self,
        ref: str,
        kind: str,
        source: str | None,
        title: str | None,
        task_id: str | None,
        data: bytes,
        redactions: int,
        created_at: str,
    ) -> None:
        """Keep an offloaded output (redacted, compressed) until the Store takes it in as evidence under the same ref."""
        self._conn.execute(
            "INSERT OR IGNORE INTO evidence_inbox (project, ref, kind, source, title, task_id, data, redactions, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (self.project, ref, kind, source, title, task_id, data, redactions, created_at),
        )

    def binding(self) -> tuple[str, bool] | None:
        """The task a session is bound to and whether the agent saved it itself, or None."""
        row = self._conn.execute(
            "SELECT task_id, bound FROM sessions WHERE project = ? AND session_id = ?", (self.project, self.session_id)
        ).fetchone()
        return (str(row[0]), bool(row[1])) if row else None

    def latest_state_json(self, task_id: str) -> tuple[int, str] | None:
        """(version, state JSON) of a task's latest checkpoint, or None."""
        row = self._conn.execute(
            "SELECT c.version, c.state_json FROM tasks t JOIN checkpoints c ON c.project = t.project AND "
            "c.task_id = t.task_id AND c.version = t.latest_version WHERE t.project = ? AND t.task_id = ?",
            (self.project, task_id),
        ).fetchone()
        return (int(row[0]), str(row[1])) if row else None

    def open_intents(self, task_id: str) -> list[tuple[str, str, str]]:
        """(idempotency key, action, target) of the task's journaled side effects without a result."""
        return self._conn.execute(
            "SELECT idempotency_key, action, target FROM actions WHERE project = ? AND task_id = ? AND "
            "status = 'open' ORDER BY intent_at",
            (self.project, task_id),
        ).fetchall()

    def keep_summary(self, task_id: str, summary: str, source: str, at: str) -> None:
        """Keep a client's compaction summary (as checked) as the task's semantic summary; its digest stays as it was,
        unless a bundle brought it: then the whole row is this machine's now (a checked summary never joins a
        bundle's quoted digest)."""
        self._conn.execute(
            "INSERT INTO task_digests (project, task_id, digest, summary, source, updated_at) VALUES (?, ?, '', ?, ?, ?) "
            "ON CONFLICT (project, task_id) DO UPDATE SET summary = excluded.summary, updated_at = excluded.updated_at, "
            "digest = CASE WHEN task_digests.imported_from IS NULL THEN task_digests.digest ELSE '' END, "
            "source = CASE WHEN task_digests.imported_from IS NULL THEN task_digests.source ELSE excluded.source END, "
            "imported_from = NULL",
            (self.project, task_id, summary, source, at),
        )
