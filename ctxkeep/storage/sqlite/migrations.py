"""Numbered, forward-only schema migrations, plain SQL; `opener.migrate` applies them, each in its own transaction.

A database whose newest applied migration is above the newest one here was written by a newer ctxkeep and is refused
(never migrated down). The one opener (`opener.py`) runs them for the Store and the hooks' fast path alike; work that
needs Python (the file's random term key, indexing stored text again) is left owed in `store_meta` and done by the
Store when it opens the file (`schema.finish_index`). A migration that rebuilds a table others reference runs with
foreign keys off (`FOREIGN_KEYS_OFF`; they are checked before it commits). A file that is not ctxkeep's is refused
before anything is written to it (`opener.check_ours`).
"""

from __future__ import annotations

import sqlite3

APPLICATION_ID = 0x6374786B  # "ctxk" in the SQLite header, so `file` and this check know the file
FIRST_MIGRATION = "tasks and checkpoints"
REBUILD_INDEX = "owed:rebuild-index"

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        "tasks and checkpoints",
        """
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
    """,
    ),
    (
        2,
        "evidence: blobs, records, full-text index",
        """
        CREATE TABLE blobs (
            id INTEGER PRIMARY KEY,
            sha256 TEXT NOT NULL UNIQUE,
            data BLOB NOT NULL,
            bytes INTEGER NOT NULL
        );
        CREATE TABLE evidence (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            project TEXT NOT NULL,
            ref TEXT NOT NULL,
            blob_id INTEGER NOT NULL REFERENCES blobs (id),
            kind TEXT NOT NULL,
            source TEXT,
            title TEXT,
            task_id TEXT,
            tags_json TEXT NOT NULL,
            effective_at TEXT,
            expires_at TEXT,
            created_at TEXT NOT NULL,
            bytes INTEGER NOT NULL,
            tokens INTEGER NOT NULL,
            lines INTEGER NOT NULL,
            chunk_chars INTEGER NOT NULL,
            redactions INTEGER NOT NULL,
            index_version INTEGER NOT NULL,
            UNIQUE (project, ref)
        );
        CREATE INDEX evidence_by_blob ON evidence (blob_id);
        CREATE INDEX evidence_by_task ON evidence (project, task_id);
        CREATE INDEX evidence_by_expiry ON evidence (project, expires_at);
        CREATE VIRTUAL TABLE evidence_fts USING fts5 (terms, content = '', tokenize = 'unicode61');
        CREATE VIRTUAL TABLE evidence_vocab USING fts5vocab (evidence_fts, 'row');
    """,
    ),
    (
        3,
        "the latest history digest and summary of each task; compression cursors",
        """
        CREATE TABLE task_digests (
            project TEXT NOT NULL,
            task_id TEXT NOT NULL,
            digest TEXT NOT NULL,
            summary TEXT,
            source TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (project, task_id)
        ) WITHOUT ROWID;
        CREATE TABLE compress_cursors (
            project TEXT NOT NULL,
            source TEXT NOT NULL,
            prefix_count INTEGER NOT NULL,
            prefix_hash TEXT NOT NULL,
            refs_json TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (project, source)
        ) WITHOUT ROWID;
    """,
    ),
    (
        4,
        "the latest working set of each task; conversation neighbours",
        """
        CREATE TABLE working_sets (
            project TEXT NOT NULL,
            task_id TEXT NOT NULL,
            focus_key TEXT NOT NULL,
            selection_json TEXT NOT NULL,
            claims_json TEXT NOT NULL,
            recent_json TEXT NOT NULL,
            built_at TEXT NOT NULL,
            PRIMARY KEY (project, task_id)
        ) WITHOUT ROWID;
        CREATE INDEX evidence_by_source ON evidence (project, source, id);
    """,
    ),
    (
        5,
        "long-term memories, their tombstones, the action journal",
        """
        CREATE TABLE memories (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            project TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            key TEXT NOT NULL,
            key_match TEXT NOT NULL,
            kind TEXT NOT NULL,
            content TEXT NOT NULL,
            confidence REAL NOT NULL,
            source_json TEXT NOT NULL,
            version INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            effective_at TEXT,
            expires_at TEXT,
            UNIQUE (project, memory_id),
            UNIQUE (project, key_match, version)
        );
        CREATE TRIGGER memories_are_immutable BEFORE UPDATE ON memories
        BEGIN SELECT RAISE(ABORT, 'memory versions are immutable'); END;
        CREATE VIRTUAL TABLE memory_fts USING fts5 (terms, content = '', tokenize = 'unicode61');
        CREATE TABLE memory_tombstones (
            project TEXT NOT NULL,
            memory_id TEXT NOT NULL,
            key_sha256 TEXT NOT NULL,
            kind TEXT NOT NULL,
            version INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            forgotten_at TEXT NOT NULL,
            reason TEXT,
            PRIMARY KEY (project, memory_id)
        ) WITHOUT ROWID;
        CREATE INDEX memory_tombstones_by_key ON memory_tombstones (project, key_sha256);
        CREATE TABLE actions (
            project TEXT NOT NULL,
            idempotency_key TEXT NOT NULL,
            task_id TEXT NOT NULL,
            action TEXT NOT NULL,
            target TEXT NOT NULL,
            params_summary TEXT,
            intent_at TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT 'open',
            external_id TEXT,
            receipt_ref TEXT,
            detail TEXT,
            result_at TEXT,
            PRIMARY KEY (project, idempotency_key)
        ) WITHOUT ROWID;
        CREATE INDEX actions_by_task ON actions (project, task_id, status);
        CREATE TRIGGER action_results_are_final BEFORE UPDATE ON actions WHEN OLD.status != 'open'
        BEGIN SELECT RAISE(ABORT, 'an action result is final'); END;
        ALTER TABLE working_sets ADD COLUMN memories_json TEXT NOT NULL DEFAULT '[]';
    """,
    ),
    (
        6,
        "Claude Code sessions and the task each is bound to",
        """
        CREATE TABLE sessions (
            project TEXT NOT NULL,
            session_id TEXT NOT NULL,
            task_id TEXT NOT NULL,
            bound INTEGER NOT NULL,
            transcript_path TEXT NOT NULL,
            transcript_sha256 TEXT NOT NULL,
            updated_at TEXT NOT NULL,
            PRIMARY KEY (project, session_id)
        ) WITHOUT ROWID;
        CREATE INDEX sessions_by_update ON sessions (project, updated_at);
    """,
    ),
    (
        7,
        "session records captured by the client hooks, per-session hook state, the hooks' evidence inbox",
        """
        CREATE TABLE session_records (
            project TEXT NOT NULL,
            session_id TEXT NOT NULL,
            kind TEXT NOT NULL,
            key TEXT NOT NULL,
            text TEXT NOT NULL,
            at TEXT NOT NULL,
            status TEXT NOT NULL DEFAULT '',
            source TEXT NOT NULL DEFAULT '',
            ref TEXT NOT NULL DEFAULT '',
            PRIMARY KEY (project, session_id, kind, key)
        ) WITHOUT ROWID;
        CREATE TABLE session_hooks (
            project TEXT NOT NULL,
            session_id TEXT NOT NULL,
            generation INTEGER NOT NULL DEFAULT 0,
            injection TEXT,
            injection_generation INTEGER,
            transcript_size INTEGER,
            transcript_mtime_ns INTEGER,
            worker_pid INTEGER,
            worker_started_at TEXT,
            worker_done_at TEXT,
            worker_note TEXT,
            gate_blocked_at TEXT,
            last_stop_at TEXT,
            PRIMARY KEY (project, session_id)
        ) WITHOUT ROWID;
        CREATE TABLE evidence_inbox (
            project TEXT NOT NULL,
            ref TEXT NOT NULL,
            kind TEXT NOT NULL,
            source TEXT,
            title TEXT,
            task_id TEXT,
            data BLOB NOT NULL,
            redactions INTEGER NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (project, ref)
        ) WITHOUT ROWID;
    """,
    ),
    (
        8,
        "an index per project, its terms keyed per file (re-indexed at open); blobs per project",
        f"""
        CREATE TABLE store_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
        CREATE TABLE projects (id INTEGER PRIMARY KEY, project TEXT NOT NULL UNIQUE);
        CREATE TABLE blobs_by_project (
            id INTEGER PRIMARY KEY,
            project TEXT NOT NULL,
            sha256 TEXT NOT NULL,
            data BLOB NOT NULL,
            bytes INTEGER NOT NULL,
            UNIQUE (project, sha256)
        );
        INSERT INTO blobs_by_project (id, project, sha256, data, bytes)
            SELECT b.id, u.project, b.sha256, b.data, b.bytes FROM blobs b
            JOIN (SELECT blob_id, MIN(project) AS project FROM evidence GROUP BY blob_id) u ON u.blob_id = b.id;
        INSERT INTO blobs_by_project (project, sha256, data, bytes)
            SELECT u.project, b.sha256, b.data, b.bytes FROM (SELECT DISTINCT project, blob_id FROM evidence) u
            JOIN blobs b ON b.id = u.blob_id WHERE u.project > (SELECT MIN(f.project) FROM evidence f WHERE f.blob_id = u.blob_id);
        UPDATE evidence SET blob_id = (SELECT n.id FROM blobs_by_project n WHERE n.project = evidence.project
            AND n.sha256 = (SELECT b.sha256 FROM blobs b WHERE b.id = evidence.blob_id));
        DROP TABLE blobs;
        ALTER TABLE blobs_by_project RENAME TO blobs;
        DROP TABLE evidence_vocab;
        DROP TABLE evidence_fts;
        DROP TABLE memory_fts;
        INSERT INTO store_meta (name, value) VALUES ('{REBUILD_INDEX}', '1');
        PRAGMA application_id = {APPLICATION_ID};
    """,
    ),
    (
        9,
        "task leases; a shared server's user tokens (hashed); who saved each checkpoint version, under which lease",
        """
        CREATE TABLE task_leases (
            project TEXT NOT NULL,
            task_id TEXT NOT NULL,
            owner TEXT NOT NULL,
            acquired_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            PRIMARY KEY (project, task_id)
        ) WITHOUT ROWID;
        CREATE TABLE api_tokens (
            token_id TEXT PRIMARY KEY,
            user_name TEXT NOT NULL,
            secret_sha256 TEXT NOT NULL,
            projects_json TEXT NOT NULL,
            created_at TEXT NOT NULL,
            revoked_at TEXT
        ) WITHOUT ROWID;
        ALTER TABLE checkpoints ADD COLUMN author TEXT;
        ALTER TABLE checkpoints ADD COLUMN owner TEXT;
        ALTER TABLE checkpoints ADD COLUMN took_over TEXT;
    """,
    ),
    (
        10,
        "where an imported evidence record's ref was computed; which digests came from a bundle",
        """
        ALTER TABLE evidence ADD COLUMN ref_project TEXT;
        ALTER TABLE task_digests ADD COLUMN imported_from TEXT;
    """,
    ),
    (
        11,
        "writes that wait for no one: index counts without shared rows; a save, a memory's next version: one statement each",
        """
        -- PostgreSQL's only: FTS5 keeps its own counts, and one writer per file has no rows to share nor waits
    """,
    ),
]

LATEST = MIGRATIONS[-1][0]
FOREIGN_KEYS_OFF = {8}  # rebuilds `blobs`, which evidence references


def statements(sql: str) -> list[str]:
    """Split a migration script into statements, keeping trigger bodies whole."""
    out, current = [], ""
    for line in sql.strip().splitlines():
        current += line + "\n"
        if sqlite3.complete_statement(current):
            out.append(current.strip())
            current = ""
    return out
