"""Numbered, forward-only migrations of the PostgreSQL store: the same numbers and meaning as the SQLite file's
(`ctxkeep.storage.sqlite.migrations`), in PostgreSQL's SQL; each runs in its own transaction.

Differences of form, not of meaning: text that is compared or ordered is `COLLATE "C"` (byte order, as SQLite compares
text, so pages and ties come out the same); blobs belong to a project and the full-text index is a postings table per
record kind, keyed by project, from migration 2 on (SQLite reached that shape in migration 8, which here only adds the
store's metadata and its random term key); checkpoint versions also refuse an insert that does not extend the chain.
From migration 11 on no write updates a row another write may need: a term's document frequency is counted from its
postings when a query needs it, and each write appends its change to a project's totals as a row of its own
(`index_stats`, folded now and then), where one row per project made every write of the project wait for the one
before it.
"""

from __future__ import annotations

FIRST_MIGRATION = "tasks and checkpoints"
T = 'TEXT COLLATE "C"'

MIGRATIONS: list[tuple[int, str, str]] = [
    (
        1,
        FIRST_MIGRATION,
        f"""
        CREATE TABLE tasks (
            project {T} NOT NULL,
            task_id {T} NOT NULL,
            latest_version INTEGER NOT NULL,
            created_at {T} NOT NULL,
            updated_at {T} NOT NULL,
            folded {T} NOT NULL,
            PRIMARY KEY (project, task_id)
        );
        CREATE INDEX tasks_by_update ON tasks (project, updated_at);
        CREATE TABLE checkpoints (
            project {T} NOT NULL,
            task_id {T} NOT NULL,
            version INTEGER NOT NULL CHECK (version >= 1),
            hash {T} NOT NULL,
            parent_hash {T},
            state_json TEXT NOT NULL,
            state_schema INTEGER NOT NULL,
            trigger {T} NOT NULL,
            goal_change_reason TEXT,
            violations_json TEXT NOT NULL,
            created_at {T} NOT NULL,
            PRIMARY KEY (project, task_id, version),
            FOREIGN KEY (project, task_id) REFERENCES tasks (project, task_id) ON DELETE CASCADE
        );
        CREATE FUNCTION ctxkeep_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION USING MESSAGE = TG_ARGV[0], ERRCODE = 'restrict_violation'; END $$;
        CREATE TRIGGER checkpoints_are_immutable BEFORE UPDATE ON checkpoints
            FOR EACH ROW EXECUTE FUNCTION ctxkeep_refuse('checkpoint versions are immutable');
    """,
    ),
    (
        2,
        "evidence: blobs, records, full-text index",
        f"""
        CREATE TABLE projects (id SERIAL PRIMARY KEY, project {T} NOT NULL UNIQUE);
        CREATE TABLE blobs (
            id BIGSERIAL PRIMARY KEY,
            project {T} NOT NULL,
            sha256 {T} NOT NULL,
            data BYTEA NOT NULL,
            bytes BIGINT NOT NULL,
            UNIQUE (project, sha256)
        );
        ALTER TABLE blobs ALTER COLUMN data SET STORAGE EXTERNAL;
        CREATE TABLE evidence (
            id BIGSERIAL PRIMARY KEY,
            project {T} NOT NULL,
            ref {T} NOT NULL,
            blob_id BIGINT NOT NULL REFERENCES blobs (id),
            kind {T} NOT NULL,
            source {T},
            title {T},
            task_id {T},
            tags_json TEXT NOT NULL,
            effective_at {T},
            expires_at {T},
            created_at {T} NOT NULL,
            bytes BIGINT NOT NULL,
            tokens BIGINT NOT NULL,
            lines BIGINT NOT NULL,
            chunk_chars BIGINT NOT NULL,
            redactions BIGINT NOT NULL,
            index_version INTEGER NOT NULL,
            index_length INTEGER NOT NULL,
            UNIQUE (project, ref)
        );
        CREATE INDEX evidence_by_blob ON evidence (blob_id);
        CREATE INDEX evidence_by_task ON evidence (project, task_id);
        CREATE INDEX evidence_by_expiry ON evidence (project, expires_at);
        CREATE TABLE evidence_terms (
            project_id INTEGER NOT NULL,
            term BIGINT NOT NULL,
            evidence_id BIGINT NOT NULL,
            tf INTEGER NOT NULL,
            PRIMARY KEY (project_id, term, evidence_id) INCLUDE (tf)
        );
        CREATE TABLE evidence_df (
            project_id INTEGER NOT NULL,
            term BIGINT NOT NULL,
            df INTEGER NOT NULL,
            PRIMARY KEY (project_id, term)
        );
        CREATE TABLE index_stats (
            project_id INTEGER NOT NULL,
            kind {T} NOT NULL,
            docs BIGINT NOT NULL,
            length BIGINT NOT NULL,
            PRIMARY KEY (project_id, kind)
        );
    """,
    ),
    (
        3,
        "the latest history digest and summary of each task; compression cursors",
        f"""
        CREATE TABLE task_digests (
            project {T} NOT NULL,
            task_id {T} NOT NULL,
            digest TEXT NOT NULL,
            summary TEXT,
            source {T} NOT NULL,
            updated_at {T} NOT NULL,
            PRIMARY KEY (project, task_id)
        );
        CREATE TABLE compress_cursors (
            project {T} NOT NULL,
            source {T} NOT NULL,
            prefix_count INTEGER NOT NULL,
            prefix_hash {T} NOT NULL,
            refs_json TEXT NOT NULL,
            updated_at {T} NOT NULL,
            PRIMARY KEY (project, source)
        );
    """,
    ),
    (
        4,
        "the latest working set of each task; conversation neighbours",
        f"""
        CREATE TABLE working_sets (
            project {T} NOT NULL,
            task_id {T} NOT NULL,
            focus_key {T} NOT NULL,
            selection_json TEXT NOT NULL,
            claims_json TEXT NOT NULL,
            recent_json TEXT NOT NULL,
            built_at {T} NOT NULL,
            PRIMARY KEY (project, task_id)
        );
        CREATE INDEX evidence_by_source ON evidence (project, source, id);
    """,
    ),
    (
        5,
        "long-term memories, their tombstones, the action journal",
        f"""
        CREATE TABLE memories (
            id BIGSERIAL PRIMARY KEY,
            project {T} NOT NULL,
            memory_id {T} NOT NULL,
            key TEXT NOT NULL,
            key_match {T} NOT NULL,
            kind {T} NOT NULL,
            content TEXT NOT NULL,
            confidence DOUBLE PRECISION NOT NULL,
            source_json TEXT NOT NULL,
            version INTEGER NOT NULL,
            created_at {T} NOT NULL,
            effective_at {T},
            expires_at {T},
            index_length INTEGER NOT NULL,
            UNIQUE (project, memory_id),
            UNIQUE (project, key_match, version)
        );
        CREATE TRIGGER memories_are_immutable BEFORE UPDATE ON memories
            FOR EACH ROW EXECUTE FUNCTION ctxkeep_refuse('memory versions are immutable');
        CREATE TABLE memory_terms (
            project_id INTEGER NOT NULL,
            term BIGINT NOT NULL,
            memory_id BIGINT NOT NULL,
            tf INTEGER NOT NULL,
            PRIMARY KEY (project_id, term, memory_id) INCLUDE (tf)
        );
        CREATE TABLE memory_df (
            project_id INTEGER NOT NULL,
            term BIGINT NOT NULL,
            df INTEGER NOT NULL,
            PRIMARY KEY (project_id, term)
        );
        CREATE TABLE memory_tombstones (
            project {T} NOT NULL,
            memory_id {T} NOT NULL,
            key_sha256 {T} NOT NULL,
            kind {T} NOT NULL,
            version INTEGER NOT NULL,
            created_at {T} NOT NULL,
            forgotten_at {T} NOT NULL,
            reason TEXT,
            PRIMARY KEY (project, memory_id)
        );
        CREATE INDEX memory_tombstones_by_key ON memory_tombstones (project, key_sha256);
        CREATE TABLE actions (
            project {T} NOT NULL,
            idempotency_key {T} NOT NULL,
            task_id {T} NOT NULL,
            action TEXT NOT NULL,
            target TEXT NOT NULL,
            params_summary TEXT,
            intent_at {T} NOT NULL,
            status {T} NOT NULL DEFAULT 'open',
            external_id TEXT,
            receipt_ref TEXT,
            detail TEXT,
            result_at {T},
            PRIMARY KEY (project, idempotency_key)
        );
        CREATE INDEX actions_by_task ON actions (project, task_id, status);
        CREATE TRIGGER action_results_are_final BEFORE UPDATE ON actions FOR EACH ROW WHEN (OLD.status <> 'open')
            EXECUTE FUNCTION ctxkeep_refuse('an action result is final');
        ALTER TABLE working_sets ADD COLUMN memories_json TEXT NOT NULL DEFAULT '[]';
    """,
    ),
    (
        6,
        "Claude Code sessions and the task each is bound to",
        f"""
        CREATE TABLE sessions (
            project {T} NOT NULL,
            session_id {T} NOT NULL,
            task_id {T} NOT NULL,
            bound INTEGER NOT NULL,
            transcript_path TEXT NOT NULL,
            transcript_sha256 {T} NOT NULL,
            updated_at {T} NOT NULL,
            PRIMARY KEY (project, session_id)
        );
        CREATE INDEX sessions_by_update ON sessions (project, updated_at);
    """,
    ),
    (
        7,
        "session records captured by the client hooks, per-session hook state, the hooks' evidence inbox",
        f"""
        CREATE TABLE session_records (
            project {T} NOT NULL,
            session_id {T} NOT NULL,
            kind {T} NOT NULL,
            key {T} NOT NULL,
            text TEXT NOT NULL,
            at {T} NOT NULL,
            status {T} NOT NULL DEFAULT '',
            source {T} NOT NULL DEFAULT '',
            ref {T} NOT NULL DEFAULT '',
            PRIMARY KEY (project, session_id, kind, key)
        );
        CREATE TABLE session_hooks (
            project {T} NOT NULL,
            session_id {T} NOT NULL,
            generation INTEGER NOT NULL DEFAULT 0,
            injection TEXT,
            injection_generation INTEGER,
            transcript_size BIGINT,
            transcript_mtime_ns BIGINT,
            worker_pid INTEGER,
            worker_started_at {T},
            worker_done_at {T},
            worker_note TEXT,
            gate_blocked_at {T},
            last_stop_at {T},
            PRIMARY KEY (project, session_id)
        );
        CREATE TABLE evidence_inbox (
            project {T} NOT NULL,
            ref {T} NOT NULL,
            kind {T} NOT NULL,
            source {T},
            title {T},
            task_id {T},
            data BYTEA NOT NULL,
            redactions INTEGER NOT NULL,
            created_at {T} NOT NULL,
            PRIMARY KEY (project, ref)
        );
    """,
    ),
    (
        8,
        "the store's metadata and its random term key (the index is per project and blobs per project since 2)",
        f"""
        CREATE TABLE store_meta (name {T} PRIMARY KEY, value TEXT NOT NULL);
    """,
    ),
    (
        9,
        "task leases; a shared server's user tokens (hashed); who saved each checkpoint version, under which lease",
        f"""
        CREATE TABLE task_leases (
            project {T} NOT NULL,
            task_id {T} NOT NULL,
            owner {T} NOT NULL,
            acquired_at {T} NOT NULL,
            expires_at {T} NOT NULL,
            PRIMARY KEY (project, task_id)
        );
        CREATE TABLE api_tokens (
            token_id {T} PRIMARY KEY,
            user_name {T} NOT NULL,
            secret_sha256 {T} NOT NULL,
            projects_json TEXT NOT NULL,
            created_at {T} NOT NULL,
            revoked_at {T}
        );
        ALTER TABLE checkpoints ADD COLUMN author {T};
        ALTER TABLE checkpoints ADD COLUMN owner {T};
        ALTER TABLE checkpoints ADD COLUMN took_over TEXT;
        CREATE FUNCTION ctxkeep_extend_chain() RETURNS trigger LANGUAGE plpgsql AS $$
        DECLARE parent TEXT;
        BEGIN
            IF NEW.version > 1 THEN
                SELECT c.hash INTO parent FROM checkpoints c
                    WHERE c.project = NEW.project AND c.task_id = NEW.task_id AND c.version = NEW.version - 1;
                IF NOT FOUND THEN
                    RAISE EXCEPTION USING ERRCODE = 'restrict_violation',
                        MESSAGE = format('checkpoint %s v%s does not follow a stored version', NEW.task_id, NEW.version);
                END IF;
            END IF;
            IF NEW.parent_hash IS DISTINCT FROM parent THEN
                RAISE EXCEPTION USING ERRCODE = 'restrict_violation',
                    MESSAGE = format('checkpoint %s v%s does not name the hash of the version before it', NEW.task_id, NEW.version);
            END IF;
            RETURN NEW;
        END $$;
        CREATE TRIGGER checkpoints_extend_the_chain BEFORE INSERT ON checkpoints
            FOR EACH ROW EXECUTE FUNCTION ctxkeep_extend_chain();
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
        DROP TABLE evidence_df;
        DROP TABLE memory_df;
        ALTER TABLE index_stats DROP CONSTRAINT index_stats_pkey;
        ALTER TABLE index_stats ADD COLUMN id BIGSERIAL PRIMARY KEY;
        CREATE INDEX index_stats_by_kind ON index_stats (project_id, kind);
        CREATE FUNCTION ctxkeep_append(
            lock_key BIGINT, p_project TEXT, p_task TEXT, p_folded TEXT, expected INTEGER,
            seen_owner TEXT, seen_acquired TEXT, seen_expires TEXT,
            lease_owner TEXT, lease_acquired TEXT, lease_expires TEXT, release_owner TEXT,
            v_version INTEGER, v_hash TEXT, v_parent TEXT, v_state TEXT, v_schema INTEGER, v_trigger TEXT,
            v_reason TEXT, v_violations TEXT, v_created TEXT, v_author TEXT, v_owner TEXT, v_took_over TEXT
        ) RETURNS BOOLEAN LANGUAGE plpgsql AS $$
        DECLARE
            head INTEGER;
            held task_leases%ROWTYPE;
        BEGIN
            PERFORM pg_advisory_xact_lock(lock_key);
            SELECT latest_version INTO head FROM tasks WHERE project = p_project AND task_id = p_task;
            IF COALESCE(head, 0) <> expected THEN
                RETURN FALSE;
            END IF;
            SELECT * INTO held FROM task_leases WHERE project = p_project AND task_id = p_task;
            IF ROW(held.owner, held.acquired_at, held.expires_at) IS DISTINCT FROM
                    ROW(seen_owner, seen_acquired, seen_expires) THEN
                RETURN FALSE;
            END IF;
            IF lease_owner IS NOT NULL THEN
                INSERT INTO task_leases (project, task_id, owner, acquired_at, expires_at)
                    VALUES (p_project, p_task, lease_owner, lease_acquired, lease_expires)
                    ON CONFLICT (project, task_id) DO UPDATE SET owner = excluded.owner,
                    acquired_at = excluded.acquired_at, expires_at = excluded.expires_at;
            ELSIF release_owner IS NOT NULL THEN
                DELETE FROM task_leases WHERE project = p_project AND task_id = p_task AND owner = release_owner;
            END IF;
            IF v_version IS NOT NULL THEN
                INSERT INTO tasks (project, task_id, latest_version, created_at, updated_at, folded)
                    VALUES (p_project, p_task, v_version, v_created, v_created, p_folded)
                    ON CONFLICT (project, task_id) DO UPDATE SET latest_version = excluded.latest_version,
                    updated_at = excluded.updated_at;
                INSERT INTO checkpoints (project, task_id, version, hash, parent_hash, state_json, state_schema,
                    trigger, goal_change_reason, violations_json, created_at, author, owner, took_over)
                    VALUES (p_project, p_task, v_version, v_hash, v_parent, v_state, v_schema, v_trigger, v_reason,
                    v_violations, v_created, v_author, v_owner, v_took_over);
            END IF;
            RETURN TRUE;
        END $$;
        CREATE FUNCTION ctxkeep_remember(
            lock_key BIGINT, p_project TEXT, p_project_id INTEGER, p_key_sha256 TEXT,
            m_memory_id TEXT, m_key TEXT, m_key_match TEXT, m_kind TEXT, m_content TEXT,
            m_confidence DOUBLE PRECISION, m_source_json TEXT, m_version INTEGER, m_created TEXT, m_effective TEXT,
            m_expires TEXT, m_length INTEGER, m_terms BIGINT[], m_tfs INTEGER[]
        ) RETURNS BIGINT LANGUAGE plpgsql AS $$
        DECLARE
            newest INTEGER;
            new_id BIGINT;
        BEGIN
            PERFORM pg_advisory_xact_lock(lock_key);
            SELECT MAX(v) INTO newest FROM (
                SELECT MAX(version) AS v FROM memories WHERE project = p_project AND key_match = m_key_match
                UNION ALL SELECT MAX(version) FROM memory_tombstones WHERE project = p_project AND key_sha256 = p_key_sha256
            ) versions;
            IF COALESCE(newest, 0) + 1 <> m_version THEN
                RETURN NULL;
            END IF;
            INSERT INTO memories (project, memory_id, key, key_match, kind, content, confidence, source_json, version,
                created_at, effective_at, expires_at, index_length)
                VALUES (p_project, m_memory_id, m_key, m_key_match, m_kind, m_content, m_confidence, m_source_json,
                m_version, m_created, m_effective, m_expires, m_length) RETURNING id INTO new_id;
            INSERT INTO memory_terms (project_id, term, memory_id, tf)
                SELECT p_project_id, u.term, new_id, u.tf FROM unnest(m_terms, m_tfs) AS u(term, tf);
            INSERT INTO index_stats (project_id, kind, docs, length) VALUES (p_project_id, 'memory', 1, m_length);
            RETURN new_id;
        END $$;
    """,
    ),
]

LATEST = MIGRATIONS[-1][0]
