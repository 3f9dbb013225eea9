"""The Store interface tools use: one transaction (`Tx`) exposes a query object per record kind.

A backend implements `Store` (open, transactions, maintenance) and the `…Queries` protocols below; tools never see
which one they run on. Every query is scoped by `project` (a shared server's user tokens, `TokensQueries`, belong to
the whole database); rows are the dataclasses of `ctxkeep.storage.rows`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Protocol

from ctxkeep.db_location import is_database_url
from ctxkeep.storage.rows import (
    ActionRow,
    CheckpointRow,
    CursorRow,
    DigestRow,
    EvidenceRow,
    InboxRow,
    InjectionRow,
    LeaseRow,
    MemoryRow,
    NewEvidence,
    SearchFilter,
    SeenSessionRow,
    SessionRow,
    ShownRow,
    TaskRow,
    TokenRow,
    TombstoneRow,
    WorkingSetRow,
)


class CheckpointsQueries(Protocol):
    async def lock(self, project: str, task_id: str) -> None:
        """Make this write transaction the only writer of the task's chain and lease until it ends; call it right
        before the conditional write (read the head again after it). Writers of other tasks never wait for it. On
        SQLite every write transaction is the file's only writer already. Raises DatabaseUnavailable (busy) after
        the busy timeout."""

    async def latest_version(self, project: str, task_id: str) -> int:
        """The task's newest version, 0 when the task does not exist."""

    async def head(self, project: str, task_id: str) -> tuple[int, LeaseRow | None]:
        """The task's newest version (0 when it does not exist) and its lease, in one query."""

    async def append(
        self,
        project: str,
        task_id: str,
        expected: int,
        seen: LeaseRow | None,
        lease: LeaseRow | None,
        release: str | None,
        row: CheckpointRow | None,
    ) -> bool:
        """A save's conditional write, alone in its write transaction: holding the task, when it is still at version
        `expected` with the lease `seen`, write `lease` (or release `release`'s lease) and append `row` (None: no new
        version); False, with nothing written, when another write came first. On PostgreSQL one statement, run on
        its own, so the task is held only while the database runs it."""

    async def get(self, project: str, task_id: str, version: int | None = None) -> tuple[CheckpointRow, int] | None:
        """A version (the latest when None) and the task's latest version number, in one query."""

    async def chain(self, project: str, task_id: str, first: int = 1, last: int | None = None) -> list[CheckpointRow]:
        """The versions first..last (all by default) of a task, oldest first."""

    async def insert(self, project: str, row: CheckpointRow) -> None:
        """Store a new version and make it the task's latest (creating the task at version 1)."""

    async def tasks(self, project: str, limit: int, after: tuple[str, str] | None = None) -> list[TaskRow]:
        """The project's tasks with their latest state, most recently updated first (ties by task id); with `after`
        (the updated_at and task id of the last task of a page), the tasks after it."""

    async def task_ids(self, project: str, prefix: str, limit: int) -> tuple[list[str], int]:
        """Up to `limit` task ids starting with `prefix` (casefolded both), most recently updated first, and how many
        match in all."""

    async def quoting(self, project: str, needle: str, limit: int) -> list[tuple[str, int]]:
        """(task_id, version) of the versions whose state JSON contains `needle` verbatim."""


class DigestsQueries(Protocol):
    async def put(self, project: str, row: DigestRow) -> None:
        """Store a task's digest; a new digest without a summary keeps the summary of the same source, when that one
        was made here (an imported summary is never kept under a digest made here)."""

    async def get(self, project: str, task_id: str) -> DigestRow | None: ...

    async def all(self, project: str) -> list[DigestRow]: ...

    async def rewrite(self, project: str, row: DigestRow) -> bool:
        """Replace a task's digest and summary text as given (nothing merged), when it is still the one written at
        `row.updated_at`; False, with nothing written, when another write replaced it meanwhile."""


class CursorsQueries(Protocol):
    async def put(self, project: str, row: CursorRow) -> None: ...

    async def get(self, project: str, source: str) -> CursorRow | None: ...


class EvidenceQueries(Protocol):
    async def insert(self, project: str, items: Sequence[NewEvidence]) -> list[str]:
        """Store the records whose refs are not stored yet (one stored meanwhile by a concurrent call is left as it is),
        sharing the project's blobs by sha256, and index them (`terms`: the record's index terms,
        `ctxkeep.storage.index_terms`); the refs this call stored, in input order."""

    async def rows(
        self, project: str, refs: Sequence[str], where: SearchFilter | None = None
    ) -> dict[str, EvidenceRow]:
        """The records behind `refs` in the project (only those passing `where`, when given)."""

    async def ref_projects(self, project: str, refs: Sequence[str]) -> dict[str, str]:
        """For the records among `refs` imported from a bundle of another project: the project their ref was computed
        in (records whose ref was computed here are left out)."""

    async def by_prefix(self, project: str, prefix: str, limit: int = 2) -> list[EvidenceRow]:
        """Records whose ref starts with `prefix` (at most `limit`), for short refs shown in working sets."""

    async def sharing_prefix(self, project: str, prefixes: Sequence[str]) -> list[str]:
        """Every ref of the project that starts with one of `prefixes`."""

    async def neighbours(
        self, project: str, hits: Sequence[EvidenceRow], where: SearchFilter, span: int
    ) -> list[tuple[int, EvidenceRow]]:
        """Up to `span` records on each side of each hit among the records of the same source (insertion order),
        as (hit id, neighbour) pairs; neighbours that fail the filters are left out."""

    async def blob(self, blob_id: int) -> bytes: ...

    async def blobs(self, blob_ids: Sequence[int]) -> dict[int, bytes]: ...

    async def document_frequencies(self, project: str, terms: Sequence[str]) -> dict[str, int]:
        """How many of the project's records hold each term; absent terms are left out."""

    async def search(
        self, project: str, terms: Sequence[str], where: SearchFilter, limit: int
    ) -> list[tuple[EvidenceRow, float]]:
        """Records matching any term, best BM25 (the project's records only) first, with their score (> 0).

        The index is ranked on its own first (FTS5 keeps only the best few), then filtered; only
        when the filters leave too few of those does the slower filtered ranking of every match run."""

    async def delete(self, project: str, row: EvidenceRow, terms: str) -> bool:
        """Remove a record and its index entry; remove its blob when no other record of the project uses it (True when
        the blob went). The index merge and WAL truncation are owed: `Store.checkpoint_wal()` finishes them."""

    async def expired(self, project: str, now: str) -> list[EvidenceRow]: ...

    async def delete_orphan_blobs(self, project: str) -> int: ...


class JournalQueries(Protocol):
    async def get(self, project: str, key: str) -> ActionRow | None: ...

    async def insert_intent(self, project: str, row: ActionRow) -> bool:
        """Record an intent; False (nothing written) when the key is taken already, also by a concurrent call."""

    async def set_result(self, project: str, row: ActionRow) -> bool:
        """Record the result of an open intent; False (nothing written) when it has one already, also when a
        concurrent call wrote it first (the table refuses to change a result once written)."""

    async def open_for_task(self, project: str, task_id: str) -> list[ActionRow]:
        """The task's intents without a result, oldest first."""

    async def for_task(self, project: str, task_id: str) -> list[ActionRow]:
        """Every journal entry of the task, oldest first."""

    async def recent(self, project: str, open_only: bool, limit: int) -> list[ActionRow]:
        """The project's journal entries of every task (only intents without a result when `open_only`), the most
        recently intended first (ties by idempotency key)."""


class MemoriesQueries(Protocol):
    async def lock(self, project: str, key_match: str) -> None:
        """Make this write transaction the only writer of one memory key's versions until it ends (as
        `CheckpointsQueries.lock` for a task)."""

    async def versions(self, project: str, key_matches: Sequence[str]) -> list[MemoryRow]:
        """Every stored version of the given keys, oldest first within each key."""

    async def by_ids(self, project: str, memory_ids: Sequence[str]) -> list[MemoryRow]: ...

    async def keys(self, project: str, kind: str | None, limit: int) -> list[str]:
        """Keys with a version of `kind` (any kind when None), the most recently written first."""

    async def matching(self, project: str, terms: Sequence[str], limit: int) -> list[tuple[str, float]]:
        """(key, best BM25 score > 0, the project's memories only) of the keys whose versions hold any of the terms,
        best first."""

    async def next_version(self, project: str, key_match: str, key_sha256: str) -> int:
        """One more than any version of the key ever stored, forgotten ones included (ids never repeat)."""

    async def insert(self, project: str, row: MemoryRow, terms: str) -> MemoryRow: ...

    async def insert_next(self, project: str, row: MemoryRow, terms: str, key_sha256: str) -> MemoryRow | None:
        """Store `row` as its key's next version when `row.version` still is (one more than any version ever stored,
        forgotten ones included), alone in its write transaction; None, with nothing written, when another write
        took it. On PostgreSQL one statement, run on its own, so the key is held only while the database runs it."""

    async def delete(
        self, project: str, rows: Sequence[tuple[MemoryRow, str]], tombstones: Sequence[TombstoneRow]
    ) -> None:
        """Remove memories (each with its index terms) and their index entries, leave tombstones; the index merge and
        WAL truncation are owed: `Store.checkpoint_wal()` finishes them."""

    async def tombstones(self, project: str, memory_ids: Sequence[str]) -> list[TombstoneRow]: ...

    async def tombstones_of_key(self, project: str, key_sha256: str) -> list[TombstoneRow]: ...


class SessionsQueries(Protocol):
    async def put(self, project: str, row: SessionRow) -> None: ...

    async def get(self, project: str, session_id: str) -> SessionRow | None: ...

    async def latest(self, project: str) -> SessionRow | None:
        """The session the hooks saw last in this project."""

    async def injections(self, project: str, limit: int) -> list[InjectionRow]:
        """The last injection of each session that had one, the sessions seen most recently first (ties by id)."""

    async def seen(self, project: str, limit: int) -> list[SeenSessionRow]:
        """The sessions the hooks saw (bound to a task or not), the one with the newest record first (ties by id)."""

    async def shown(self, project: str, session_id: str, limit: int) -> list[ShownRow]:
        """A session's log of what the hooks showed the model, oldest first (the newest `limit`)."""


class StatsQueries(Protocol):
    async def counts(self, project: str) -> dict[str, int]: ...

    async def file_bytes(self) -> int:
        """The database's size in pages (all projects)."""


class WorkingSetsQueries(Protocol):
    async def put(self, project: str, row: WorkingSetRow) -> None: ...

    async def get(self, project: str, task_id: str) -> WorkingSetRow | None: ...

    async def recent(self, project: str, limit: int) -> list[WorkingSetRow]:
        """The latest working set of each task, the most recently built first (ties by task id)."""

    async def forget_memories(self, project: str, memory_ids: list[str], claim_prefixes: list[str]) -> int:
        """In the cached working sets that showed any of the memories, drop the claims quoting them (the ids stay, so a
        resumed task still learns it relied on a memory that is gone); how many were rewritten."""


class LeasesQueries(Protocol):
    async def get(self, project: str, task_id: str) -> LeaseRow | None:
        """The task's lease as last written (live or expired), or None."""

    async def put(self, project: str, row: LeaseRow) -> None:
        """Write the task's lease (replacing the one before)."""

    async def release(self, project: str, task_id: str, owner: str) -> bool:
        """Remove the task's lease when `owner` holds it; True when it did."""


class TokensQueries(Protocol):
    """A shared server's user tokens (the whole database's, not one project's)."""

    async def insert(self, row: TokenRow) -> None: ...

    async def get(self, token_id: str) -> TokenRow | None: ...

    async def all(self) -> list[TokenRow]:
        """Every token ever created, revoked ones too, oldest first."""

    async def any(self) -> bool:
        """Whether any token was ever created (revoked ones count: tokens are never deleted)."""

    async def revoke(self, token_id: str, at: str) -> bool:
        """Mark a token revoked; False when there is no such token or it was revoked already."""


LATEST_SCHEMA = 11  # the newest migration; every backend has migrations 1..LATEST_SCHEMA, a newer database is refused


class InboxQueries(Protocol):
    async def waiting(self, project: str) -> bool:
        """Whether the hooks left offloaded outputs for this project."""

    async def take(self, project: str, limit: int) -> list[InboxRow]:
        """The oldest offloaded outputs (they stay until `remove`)."""

    async def holding(self, project: str, refs: Sequence[str]) -> set[str]:
        """Which of `refs` wait in the project's inbox."""

    async def remove(self, project: str, refs: Sequence[str]) -> None: ...


class Tx(Protocol):
    """The queries available inside one transaction (or one read)."""

    @property
    def checkpoints(self) -> CheckpointsQueries: ...
    @property
    def evidence(self) -> EvidenceQueries: ...
    @property
    def digests(self) -> DigestsQueries: ...
    @property
    def cursors(self) -> CursorsQueries: ...
    @property
    def working_sets(self) -> WorkingSetsQueries: ...
    @property
    def memories(self) -> MemoriesQueries: ...
    @property
    def journal(self) -> JournalQueries: ...
    @property
    def sessions(self) -> SessionsQueries: ...
    @property
    def stats(self) -> StatsQueries: ...
    @property
    def inbox(self) -> InboxQueries: ...
    @property
    def leases(self) -> LeasesQueries: ...
    @property
    def tokens(self) -> TokensQueries: ...


class Store(ABC):
    """An open ctxkeep database (`backends.open_store(location)` opens the right one); close with `await store.close()`."""

    path: Path  # the SQLite file (a PostgreSQL store has none: Path())
    location: str  # what to show people: the file, or the URL without its password
    created = False  # this open made the SQLite file (the CLI and the server say where, once)

    @abstractmethod
    async def close(self) -> None: ...

    @abstractmethod
    async def schema_version(self) -> int:
        """The newest migration applied."""

    @abstractmethod
    async def checkpoint_wal(self) -> bool:
        """Make deleted bytes unreadable from the files now (the work deletes left owed); False when a reader or a full
        disk kept it from finishing: it stays owed, and the store finishes it after its next write or open."""

    @abstractmethod
    def read_only(self) -> str | None:
        """Why this store serves reads only (what is read-only and how to fix it); None when it can write."""

    @abstractmethod
    async def integrity_check(self) -> str:
        """'ok' when the database is sound, else what is wrong."""

    @abstractmethod
    def transaction(self) -> AbstractAsyncContextManager[Tx]:
        """A write transaction: commits on exit, rolls back and re-raises on error."""

    @abstractmethod
    def snapshot(self) -> AbstractAsyncContextManager[Tx]:
        """A read transaction: every query inside sees the same committed state."""


def is_postgres(location: Path | str) -> bool:
    """Whether a database location names a PostgreSQL server (postgresql:// or postgres://)."""
    return isinstance(location, str) and is_database_url(location)
