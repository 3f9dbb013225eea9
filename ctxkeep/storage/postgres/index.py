"""The full-text index: postings of keyed terms per project, ranked with the BM25 that SQLite's FTS5 computes.

`evidence_terms` and `memory_terms` hold (project, term, record, term frequency); `index_stats` the number of records
and of terms each project indexed. Terms are keyed with the database's random key (blake2b, 48 bits: the same keyed
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

from ctxkeep.storage.postgres.session import Conn

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
    """One kind of record's index: its postings table, the column naming the record, its document frequencies."""

    table: str
    record: str
    kind: str
    frequencies: str


EVIDENCE_POSTINGS = Postings("evidence_terms", "evidence_id", EVIDENCE, "evidence_df")
MEMORY_POSTINGS = Postings("memory_terms", "memory_id", MEMORY, "memory_df")


async def add(conn: Conn, index: Postings, project_id: int, records: Sequence[tuple[int, Counter[int], int]]) -> None:
    """Index records given as (record id, keyed term counts, number of terms); updates the project's totals and its
    terms' document frequencies."""
    rows = [(project_id, term, record, tf) for record, counts, _ in records for term, tf in counts.items()]
    if rows:
        await conn.copy_records_to_table(index.table, records=rows, columns=["project_id", "term", index.record, "tf"])
        held = Counter(term for _, counts, _ in records for term in counts)
        await conn.execute(
            f"INSERT INTO {index.frequencies} (project_id, term, df) SELECT $1, u.term, u.df FROM unnest($2::bigint[], "
            f"$3::integer[]) AS u(term, df) ON CONFLICT (project_id, term) DO UPDATE SET df = {index.frequencies}.df + excluded.df",
            project_id,
            list(held),
            list(held.values()),
        )
    await _count(conn, index, project_id, len(records), sum(length for _, _, length in records))


async def remove(conn: Conn, index: Postings, project_id: int, record: int, terms: Sequence[int], length: int) -> None:
    """Take a record's postings (its keyed terms) out of the index, its totals and its terms' frequencies (a term no
    record holds any more leaves no row)."""
    removed = [
        int(row[0])
        for row in await conn.fetch(
            f"DELETE FROM {index.table} WHERE project_id = $1 AND term = ANY($2::bigint[]) AND {index.record} = $3 RETURNING term",
            project_id,
            sorted(set(terms)),
            record,
        )
    ]
    if removed:
        await conn.execute(
            f"UPDATE {index.frequencies} SET df = df - 1 WHERE project_id = $1 AND term = ANY($2::bigint[])",
            project_id,
            removed,
        )
        await conn.execute(
            f"DELETE FROM {index.frequencies} WHERE project_id = $1 AND term = ANY($2::bigint[]) AND df <= 0",
            project_id,
            removed,
        )
    await _count(conn, index, project_id, -1, -length)


async def _count(conn: Conn, index: Postings, project_id: int, docs: int, length: int) -> None:
    await conn.execute(
        "INSERT INTO index_stats (project_id, kind, docs, length) VALUES ($1, $2, $3, $4) ON CONFLICT "
        "(project_id, kind) DO UPDATE SET docs = index_stats.docs + excluded.docs, "
        "length = index_stats.length + excluded.length",
        project_id,
        index.kind,
        docs,
        length,
    )


async def frequencies(conn: Conn, index: Postings, project_id: int, terms: Sequence[int]) -> dict[int, int]:
    """How many of the project's records hold each keyed term (absent terms left out)."""
    rows = await conn.fetch(
        f"SELECT term, df FROM {index.frequencies} WHERE project_id = $1 AND term = ANY($2::bigint[])",
        project_id,
        sorted(set(terms)),
    )
    return {int(term): int(n) for term, n in rows}


async def weights(
    conn: Conn, index: Postings, project_id: int, terms: Sequence[int]
) -> tuple[list[int], list[float], float] | None:
    """The query terms the project holds with their idf, and the average record length; None when none is held."""
    stats = await conn.fetchrow(
        "SELECT docs, length FROM index_stats WHERE project_id = $1 AND kind = $2", project_id, index.kind
    )
    if stats is None or int(stats["docs"]) <= 0:
        return None
    docs = int(stats["docs"])
    held = await frequencies(conn, index, project_id, terms)
    if not held:
        return None
    order = [term for term in dict.fromkeys(terms) if term in held]  # query order, as FTS5 sums its phrases
    return order, [idf(docs, held[term]) for term in order], int(stats["length"]) / docs


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
