"""The full-text index: per project, one contentless FTS5 table for evidence (with its vocabulary) and one for
memories, holding each term keyed with the file's random key.

Per project, because BM25 weighs a term by how many records hold it and by the records' average length: one shared
table let one project's text move another project's scores (and its document counts said what others store). Keyed,
because a hash under a public constant let anyone holding the file test candidate words against the index: the key
is 32 random bytes made with `secrets` when the file is created or migrated, kept in `store_meta`. The index keeps no
term of deleted text: every delete leaves a merge of its table owed (`maintenance`), done right after.
"""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass


from ctxkeep.storage.sqlite.reader import Connection
from ctxkeep.storage.index_terms import INDEX_VERSION, evidence_terms, memory_terms

_HASHED_TERM = re.compile(r"^[0-9a-f]{12}$")
_CACHE = 200_000
_BATCH = 200


def match_expression(keyed_terms: Sequence[str]) -> str:
    """An FTS5 query matching any of the terms; only keyed hashes are accepted, so no syntax can leak in."""
    for term in keyed_terms:
        if not _HASHED_TERM.match(term):
            raise ValueError(f"not a keyed term: {term!r}")
    return " OR ".join(f'"{term}"' for term in keyed_terms)


class TermKey:
    """Terms keyed with one file's key: 12 hex digits each (thread-safe; keyed terms are cached)."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._cache: dict[str, str] = {}

    def term(self, term: str) -> str:
        keyed = self._cache.get(term)
        if keyed is None:
            keyed = hashlib.blake2b(term.encode("utf-8"), digest_size=6, key=self._key).hexdigest()
            if len(self._cache) >= _CACHE:
                self._cache.clear()
            self._cache[term] = keyed
        return keyed

    def mapping(self, terms: Sequence[str]) -> dict[str, str]:
        """Each keyed term with the term it came from (to answer in the caller's terms)."""
        return {self.term(t): t for t in terms}

    def line(self, terms: str) -> str:
        """A space-separated list of terms, keyed (as the index stores them)."""
        return " ".join(map(self.term, terms.split()))


@dataclass(frozen=True)
class Tables:
    """The quoted names of one project's index tables."""

    evidence: str
    vocab: str
    memory: str


def _tables(project_id: int) -> Tables:
    return Tables(f'"evidence_fts_{project_id}"', f'"evidence_vocab_{project_id}"', f'"memory_fts_{project_id}"')


async def project_tables(conn: Connection, project: str, create: bool = False) -> Tables | None:
    """The project's index tables; None when it never stored anything indexed (unless `create`, inside a write)."""
    cursor = await conn.execute("SELECT id FROM projects WHERE project = ?", (project,))
    row = await cursor.fetchone()
    if row is not None:
        return _tables(int(row[0]))
    if not create:
        return None
    cursor = await conn.execute("INSERT INTO projects (project) VALUES (?)", (project,))
    tables = _tables(int(cursor.lastrowid or 0))
    for sql in (
        f"CREATE VIRTUAL TABLE {tables.evidence} USING fts5 (terms, content = '', tokenize = 'unicode61')",
        f"CREATE VIRTUAL TABLE {tables.vocab} USING fts5vocab ({tables.evidence}, 'row')",
        f"CREATE VIRTUAL TABLE {tables.memory} USING fts5 (terms, content = '', tokenize = 'unicode61')",
    ):
        await conn.execute(sql)
    return tables


async def table_exists(conn: Connection, quoted: str) -> bool:
    cursor = await conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (quoted.strip('"'),))
    return await cursor.fetchone() is not None


async def rebuild(conn: Connection, key: TermKey) -> None:
    """Index every stored evidence record and memory again from its stored text, each in its project's tables."""
    cursor = await conn.execute("SELECT project FROM evidence UNION SELECT project FROM memories ORDER BY 1")
    for (project,) in await cursor.fetchall():
        tables = await project_tables(conn, project, create=True)
        assert tables is not None
        await _rebuild_evidence(conn, key, project, tables.evidence)
        await _rebuild_memories(conn, key, project, tables.memory)
    await conn.execute("UPDATE evidence SET index_version = ?", (INDEX_VERSION,))


async def _rebuild_evidence(conn: Connection, key: TermKey, project: str, table: str) -> None:
    last = 0
    while True:
        cursor = await conn.execute(
            "SELECT e.id, e.title, b.data FROM evidence e JOIN blobs b ON b.id = e.blob_id WHERE e.project = ? AND e.id > ? "
            "ORDER BY e.id LIMIT ?",
            (project, last, _BATCH),
        )
        rows = list(await cursor.fetchall())
        if not rows:
            return
        await conn.executemany(
            f"INSERT INTO {table} (rowid, terms) VALUES (?, ?)",
            [
                (rowid, key.line(evidence_terms(title, zlib.decompress(data).decode("utf-8"))))
                for rowid, title, data in rows
            ],
        )
        last = int(rows[-1][0])


async def _rebuild_memories(conn: Connection, key: TermKey, project: str, table: str) -> None:
    cursor = await conn.execute("SELECT id, key, content FROM memories WHERE project = ? ORDER BY id", (project,))
    await conn.executemany(
        f"INSERT INTO {table} (rowid, terms) VALUES (?, ?)",
        [
            (rowid, key.line(memory_terms(memory_key, content)))
            for rowid, memory_key, content in await cursor.fetchall()
        ],
    )
