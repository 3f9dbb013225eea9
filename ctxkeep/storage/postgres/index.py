"""The full-text index: postings of keyed terms per project, ranked with the BM25 that SQLite's FTS5 computes.

`evidence_terms` and `memory_terms` hold (project, term, record, term frequency); `index_stats` the number of records
and of terms each project indexed, as rows each write appends (summed when read, folded now and then), and a term's
document frequency is counted from its postings: no write updates a row another write of the project needs. Terms are keyed with the database's random key (blake2b, 48 bits: the same keyed
hash as the SQLite index's 12 hex digits) and stored as integers, so the index holds no readable word and a query is
a parameter array of integers: no user string ever reaches query syntax.

The score is FTS5's `bm25()` with its defaults (k1 = 1.2, b = 0.75): for each query term found in the record,
idf · tf · (k1 + 1) / (tf + k1 · (1 − b + b · |D| / avgdl)), idf = ln((N − n + 0.5) / (n + 0.5)) (1e-6 when not
positive), where N and avgdl are over every record of the project (filters do not change them, as in FTS5) and n is
how many of them hold the term. Ties are broken by record id, as SQLite's queries do.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ctxkeep.storage.postgres.connection import Conn

K1, B = 1.2, 0.75
_CACHE = 200_000
EVIDENCE, MEMORY = "evidence", "memory"


class TermKey:
    """Terms keyed with one database's key, as 48-bit integers (keyed terms are cached)."""

    def __init__(self, key: bytes) -> None:
        self._key = key
        self._cache: dict[str, int] = {}

    def term(self, term: str) -> int:
        keyed = self._cache.get(term)
        if keyed is None:
            keyed = int.from_bytes(hashlib.blake2b(term.encode("utf-8"), digest_size=6, key=self._key).digest(), "big")
            if len(self._cache) >= _CACHE:
                self._cache.clear()
            self._cache[term] = keyed
        return keyed

    def mapping(self, terms: Sequence[str]) -> dict[int, str]:
        return {self.term(t): t for t in terms}

    def counts(self, line: str) -> tuple[Counter[int], int]:
        """The keyed terms of a space-separated line with their frequencies, and how many terms it has."""
        terms = line.split()
        return Counter(map(self.term, terms)), len(terms)


@dataclass(frozen=True)
class Postings:
    """One kind of record's index: its postings table, the column naming the record, its kind in `index_stats`."""

    table: str
    record: str
    kind: str


EVIDENCE_POSTINGS = Postings("evidence_terms", "evidence_id", EVIDENCE)
MEMORY_POSTINGS = Postings("memory_terms", "memory_id", MEMORY)
FOLD_AFTER = 64  # appended totals rows of a project and kind before they are folded into one


class Folds:
    """The store's note of which projects' totals are due a fold: after this process appended FOLD_AFTER rows to
    them, or when a read summed more than FOLD_AFTER rows. The store folds them after the transaction (`fold`)."""

    def __init__(self) -> None:
        self._appended: Counter[tuple[Postings, int]] = Counter()
        self.due: set[tuple[Postings, int]] = set()

    def appended(self, index: Postings, project_id: int) -> None:
        self._appended[index, project_id] += 1
        if self._appended[index, project_id] >= FOLD_AFTER:
            self.note(index, project_id)

    def summed(self, index: Postings, project_id: int, rows: int) -> None:
        if rows > FOLD_AFTER:
            self.note(index, project_id)

    def note(self, index: Postings, project_id: int) -> None:
        self.due.add((index, project_id))
        self._appended.pop((index, project_id), None)

    def take(self) -> list[tuple[Postings, int]]:
        due, self.due = sorted(self.due, key=lambda d: (d[0].kind, d[1])), set()
        return due


async def add(
    conn: Conn, index: Postings, project_id: int, records: Sequence[tuple[int, Counter[int], int]], folds: Folds
) -> None:
    """Index records given as (record id, keyed term counts, number of terms), and append their totals."""
    rows = [(project_id, term, record, tf) for record, counts, _ in records for term, tf in counts.items()]
    if rows:
        await conn.copy_records_to_table(index.table, records=rows, columns=["project_id", "term", index.record, "tf"])
    await _count(conn, index, project_id, len(records), sum(length for _, _, length in records))
    folds.appended(index, project_id)


async def remove(
    conn: Conn, index: Postings, project_id: int, record: int, terms: Sequence[int], length: int, folds: Folds
) -> None:
    """Take a record's postings (its keyed terms) out of the index and its totals (a term no record holds any more
    leaves no row)."""
    await conn.execute(
        f"DELETE FROM {index.table} WHERE project_id = $1 AND term = ANY($2::bigint[]) AND {index.record} = $3",
        project_id,
        sorted(set(terms)),
        record,
    )
    await _count(conn, index, project_id, -1, -length)
    folds.appended(index, project_id)


async def _count(conn: Conn, index: Postings, project_id: int, docs: int, length: int) -> None:
    """Append a change of the totals: a row of its own, so writes of one project never wait for each other here."""
    await conn.execute(
        "INSERT INTO index_stats (project_id, kind, docs, length) VALUES ($1, $2, $3, $4)",
        project_id,
        index.kind,
        docs,
        length,
    )


async def fold(conn: Conn, index: Postings, project_id: int) -> None:
    """Fold a project's appended totals rows into one, outside any write's transaction and only when no other
    process is folding them (it never waits: a fold already under way leaves this one out). Concurrent writes keep
    appending rows this fold does not see; readers see the rows before or the one row after, the same sum."""
    async with conn.transaction():
        if not await conn.fetchval("SELECT pg_try_advisory_xact_lock($1)", _fold_lock(index, project_id)):
            return
        await conn.execute(
            "WITH gone AS (DELETE FROM index_stats WHERE project_id = $1 AND kind = $2 RETURNING docs, length) "
            "INSERT INTO index_stats (project_id, kind, docs, length) SELECT $1, $2, sum(docs), sum(length) FROM gone "
            "HAVING count(*) > 0",
            project_id,
            index.kind,
        )


def _fold_lock(index: Postings, project_id: int) -> int:
    digest = hashlib.blake2b(f"ctxkeep fold\n{index.kind}\n{project_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big", signed=True)


async def totals(conn: Conn, index: Postings, project_id: int) -> tuple[int, int, int]:
    """The project's number of records and of terms, and how many appended rows hold them."""
    row = await conn.fetchrow(
        "SELECT COALESCE(sum(docs), 0), COALESCE(sum(length), 0), count(*) FROM index_stats "
        "WHERE project_id = $1 AND kind = $2",
        project_id,
        index.kind,
    )
    assert row is not None
    return int(row[0]), int(row[1]), int(row[2])


async def frequencies(conn: Conn, index: Postings, project_id: int, terms: Sequence[int]) -> dict[int, int]:
    """How many of the project's records hold each keyed term (absent terms left out), counted from the postings
    (an index-only range of the postings' primary key per term)."""
    rows = await conn.fetch(
        f"SELECT q.term, (SELECT count(*) FROM {index.table} t WHERE t.project_id = $1 AND t.term = q.term) "
        "FROM unnest($2::bigint[]) AS q(term)",
        project_id,
        sorted(set(terms)),
    )
    return {int(term): int(n) for term, n in rows if n}


async def weights(
    conn: Conn, index: Postings, project_id: int, terms: Sequence[int], folds: Folds
) -> tuple[list[int], list[float], float] | None:
    """The query terms the project holds with their idf, and the average record length; None when none is held."""
    docs, length, rows = await totals(conn, index, project_id)
    folds.summed(index, project_id, rows)
    if docs <= 0:
        return None
    held = await frequencies(conn, index, project_id, terms)
    if not held:
        return None
    order = [term for term in dict.fromkeys(terms) if term in held]  # query order, as FTS5 sums its phrases
    return order, [idf(docs, held[term]) for term in order], length / docs


def idf(docs: int, hits: int) -> float:
    value = math.log((docs - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


def scored(index: Postings, project: str, terms: str, idfs: str) -> str:
    """The FROM of a scored query (placeholders given): `q` the query terms with their idf, `t` their postings."""
    return (
        f"unnest({terms}::bigint[], {idfs}::float8[]) AS q(term, idf) "
        f"JOIN {index.table} t ON t.project_id = {project} AND t.term = q.term"
    )


def score(avgdl: str, length: str) -> str:
    """A record's BM25 (aggregate over its rows of `scored`): `length` is the SQL expression of its number of terms."""
    return f"sum(q.idf * (t.tf * {K1 + 1.0!r}) / (t.tf + {K1!r} * ({1.0 - B!r} + {B!r} * {length} / {avgdl}::float8)))"
