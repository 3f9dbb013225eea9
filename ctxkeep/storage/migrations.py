"""Numbered, forward-only schema migrations; each runs in its own transaction.

A database whose newest applied migration is above the newest one here was written by a
newer ctxkeep and is refused (never migrated down).
"""

from __future__ import annotations

MIGRATIONS: list[tuple[int, str, str]] = [
    (1, "tasks and checkpoints", """
        CREATE TABLE tasks (
            project TEXT NOT NULL,
            task_id TEXT NOT NULL,
            latest_version INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (project, task_id)
        ) WITHOUT ROWID;
        CREATE INDEX tasks_by_update ON tasks (project, updated_at);
        CREATE TABLE checkpoints (
            project TEXT NOT NULL,
            task_id TEXT NOT NULL,
            version INTEGER NOT NULL CHECK (version >= 1),
            hash TEXT NOT NULL,
            parent_hash TEXT,
            state_json TEXT NOT NULL,
            state_schema INTEGER NOT NULL,
            trigger TEXT NOT NULL,
            goal_change_reason TEXT,
            violations_json TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (project, task_id, version),
            FOREIGN KEY (project, task_id) REFERENCES tasks (project, task_id) ON DELETE CASCADE
        );
        CREATE TRIGGER checkpoints_are_immutable BEFORE UPDATE ON checkpoints
        BEGIN SELECT RAISE(ABORT, 'checkpoint versions are immutable'); END;
    """),
]

LATEST = MIGRATIONS[-1][0]
