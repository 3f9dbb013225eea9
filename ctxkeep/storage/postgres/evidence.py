"""Queries over evidence records, their compressed blobs (shared by a project's records with the same content, never
across projects), and the project's postings (`index`)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

import anyio

from ctxkeep.storage.postgres import index
from ctxkeep.storage.postgres.index import EVIDENCE_POSTINGS, TermKey
from ctxkeep.storage.postgres.maintenance import Maintenance
from ctxkeep.errors import DatabaseUnavailable, NotFound
from ctxkeep.storage.postgres.connection import Conn
from ctxkeep.storage.postgres.session import Params, Session
from ctxkeep.storage.rows import EvidenceRow, NewEvidence, SearchFilter

_ROW_COLUMNS = (
    "e.ref, e.kind, e.source, e.title, e.task_id, e.tags_json, e.effective_at, e.expires_at, "
    "e.created_at, e.bytes, e.tokens, e.lines, e.chunk_chars, e.redactions, e.index_version, "
    "b.sha256, e.id, e.blob_id"
)
_FIELDS = (
    "ref",
    "kind",
    "source",
    "title",
    "task_id",
    "tags_json",
    "effective_at",
    "expires_at",
    "created_at",
    "bytes",
    "tokens",
    "lines",
    "chunk_chars",
    "redactions",
    "index_version",
    "ref_project",
)
_FIELD_TYPES = ("text",) * 9 + ("bigint",) * 5 + ("integer", "text")
_KEY_ON_A_THREAD = 100_000  # characters of terms above which keying runs off the event loop


def conditions(p: Params, project: str, where: SearchFilter) -> str:
    """The WHERE clause (over the alias `e`) for the filters of a search, its values added to `p`."""
    clauses = [f"e.project = {p.add(project)}"]
    if where.task_id is not None and where.shared:
        clauses.append(f"(e.task_id = {p.add(where.task_id)} OR e.task_id IS NULL)")
    for column, value in (("e.task_id", None if where.shared else where.task_id), ("e.kind", where.kind)):
        if value is not None:
            clauses.append(f"{column} = {p.add(value)}")
    for tag in where.tags:
        clauses.append(
            f"EXISTS (SELECT 1 FROM jsonb_array_elements_text(e.tags_json::jsonb) tag WHERE tag = {p.add(tag)})"
        )
    if where.valid_at is not None:
        at = p.add(where.valid_at)
        clauses.append(
            f"(e.effective_at IS NULL OR e.effective_at <= {at}) AND (e.expires_at IS NULL OR e.expires_at > {at})"
        )
    if where.exclude_expired_at is not None:
        clauses.append(f"(e.expires_at IS NULL OR e.expires_at > {p.add(where.exclude_expired_at)})")
    return " AND ".join(clauses)


def _row(record: Iterable[Any]) -> EvidenceRow:
    return EvidenceRow(*record)


class Evidence:
    """Evidence queries on one transaction's connection."""

    def __init__(self, session: Session, key: TermKey, maintenance: Maintenance) -> None:
        self._s = session
        self._key = key
        self._maintenance = maintenance

    async def ref_projects(self, project: str, refs: Sequence[str]) -> dict[str, str]:
        conn = await self._s.begun()
        rows = await conn.fetch(
            "SELECT ref, ref_project FROM evidence WHERE project = $1 AND ref_project IS NOT NULL "
            "AND ref = ANY($2::text[])",
            project,
            list(refs),
        )
        return {str(row[0]): str(row[1]) for row in rows}

    async def insert(self, project: str, items: Sequence[NewEvidence]) -> list[str]:
        """Store the records whose refs are not stored yet, sharing the project's blobs by sha256, and index them; the
        refs this call stored. No lock: a record another writer stores at the same moment is stored once (the second
        insert does nothing). Ids follow the input order (ties in a ranking and neighbours go by insertion order, as
        on SQLite) while rows go in ref and sha256 order, so concurrent batches never deadlock."""
        if not items:
            return []
        unique = list({i.ref: i for i in items}.values())
        keyed = dict(zip([i.ref for i in unique], await self._keyed([i.terms for i in unique]), strict=True))
        project_id = await self._s.project_id(project, create=True)  # a new project's row before the transaction
        assert project_id is not None
        conn = await self._s.begun()  # the keying above ran before the transaction began
        blob_ids = await self._blob_ids(conn, project, {i.sha256: i for i in unique})
        new_ids = sorted(
            int(row[0])
            for row in await conn.fetch(
                "SELECT nextval(pg_get_serial_sequence('evidence', 'id')) FROM generate_series(1, $1)", len(unique)
            )
        )
        ordered = sorted(zip(new_ids, unique, strict=True), key=lambda pair: pair[1].ref)
        columns = [[getattr(i, name) for _, i in ordered] for name in _FIELDS]
        stored = await conn.fetch(
            f"INSERT INTO evidence (id, project, {', '.join(_FIELDS)}, blob_id, index_length) "
            f"SELECT u.id, $1, {', '.join(f'u.{name}' for name in _FIELDS)}, u.blob_id, u.index_length FROM unnest("
            f"$2::bigint[], {', '.join(f'${n}::{kind}[]' for n, kind in enumerate(_FIELD_TYPES, start=3))}, "
            f"${len(_FIELDS) + 3}::bigint[], ${len(_FIELDS) + 4}::integer[]) WITH ORDINALITY "
            f"AS u(id, {', '.join(_FIELDS)}, blob_id, index_length, n) ORDER BY u.n "
            "ON CONFLICT (project, ref) DO NOTHING RETURNING ref, id",
            project,
            [row_id for row_id, _ in ordered],
            *columns,
            [blob_ids[i.sha256] for _, i in ordered],
            [keyed[i.ref][1] for _, i in ordered],
        )
        ids = {str(ref): int(row_id) for ref, row_id in stored}
        await index.add(
            conn,
            EVIDENCE_POSTINGS,
            project_id,
            [(ids[i.ref], *keyed[i.ref]) for i in unique if i.ref in ids],
            self._s.folds,
        )
        return [i.ref for i in items if ids.pop(i.ref, None) is not None]

    async def _blob_ids(self, conn: Conn, project: str, blobs: dict[str, NewEvidence]) -> dict[str, int]:
        """The id of each content's blob, stored now when absent, held (KEY SHARE) so a delete of another record
        cannot remove it before this transaction's records reference it; one a delete removed meanwhile is stored
        again."""
        ids: dict[str, int] = {}
        for _ in range(3):
            missing = sorted(set(blobs) - set(ids))
            if not missing:
                return ids
            await conn.execute(
                "INSERT INTO blobs (project, sha256, data, bytes) SELECT $1, u.sha, u.data, u.bytes FROM "
                "unnest($2::text[], $3::bytea[], $4::bigint[]) AS u(sha, data, bytes) ORDER BY u.sha "
                "ON CONFLICT (project, sha256) DO NOTHING",
                project,
                missing,
                [blobs[sha].data for sha in missing],
                [blobs[sha].bytes for sha in missing],
            )
            for sha, blob_id in await conn.fetch(
                "SELECT sha256, id FROM blobs WHERE project = $1 AND sha256 = ANY($2::text[]) ORDER BY sha256 "
                "FOR KEY SHARE",
                project,
                missing,
            ):
                ids[str(sha)] = int(blob_id)
        raise DatabaseUnavailable(
            "evidence_put: a blob was deleted three times while this call stored records that share it; retry"
        )

    async def _keyed(self, lines: list[str]) -> list[tuple[Counter[int], int]]:
        if sum(map(len, lines)) < _KEY_ON_A_THREAD:
            return [self._key.counts(line) for line in lines]
        return await anyio.to_thread.run_sync(lambda: [self._key.counts(line) for line in lines])

    async def rows(
        self, project: str, refs: Sequence[str], where: SearchFilter | None = None
    ) -> dict[str, EvidenceRow]:
        conn = await self._s.begun()
        p = Params()
        clause = conditions(p, project, where) if where else f"e.project = {p.add(project)}"
        found = await conn.fetch(
            f"SELECT {_ROW_COLUMNS} FROM evidence e JOIN blobs b ON b.id = e.blob_id "
            f"WHERE {clause} AND e.ref = ANY({p.add(list(refs))}::text[])",
            *p.values,
        )
        return {str(row[0]): _row(row) for row in found}

    async def by_prefix(self, project: str, prefix: str, limit: int = 2) -> list[EvidenceRow]:
        conn = await self._s.begun()
        found = await conn.fetch(
            f"SELECT {_ROW_COLUMNS} FROM evidence e JOIN blobs b ON b.id = e.blob_id "
            "WHERE e.project = $1 AND e.ref >= $2 AND e.ref < $3 ORDER BY e.ref LIMIT $4",
            project,
            prefix,
            prefix + "g",
            limit,
        )
        return [_row(row) for row in found]

    async def sharing_prefix(self, project: str, prefixes: Sequence[str]) -> list[str]:
        conn = await self._s.begun()
        found = await conn.fetch(
            "SELECT e.ref FROM unnest($2::text[]) AS p(v) JOIN evidence e ON e.project = $1 "
            "AND e.ref >= p.v AND e.ref < p.v || 'g' ORDER BY p.v, e.ref",
            project,
            sorted(set(prefixes)),
        )
        return [str(row[0]) for row in found]

    async def neighbours(
        self, project: str, hits: Sequence[EvidenceRow], where: SearchFilter, span: int
    ) -> list[tuple[int, EvidenceRow]]:
        """Up to `span` records on each side of each hit among the records of the same source (insertion order), as
        (hit id, neighbour) pairs; neighbours that fail the filters are left out."""
        if not hits:
            return []
        conn = await self._s.begun()
        side = (
            "SELECT p.id, {rank} AS rank FROM evidence p WHERE p.project = $1 AND p.source = h.source AND p.id {op} h.id "
            "ORDER BY p.id {order} LIMIT $4"
        )
        found = await conn.fetch(
            "SELECT h.id, n.id FROM unnest($2::bigint[], $3::text[]) WITH ORDINALITY AS h(id, source, ord) CROSS JOIN LATERAL "
            f"(({side.format(rank=0, op='<', order='DESC')}) UNION ALL ({side.format(rank=1, op='>', order='ASC')})) n "
            "ORDER BY h.ord, n.rank, CASE WHEN n.rank = 0 THEN -n.id ELSE n.id END",
            project,
            [row.id for row in hits],
            [row.source for row in hits],
            span,
        )
        near: dict[int, list[int]] = {}
        for hit, neighbour in found:
            near.setdefault(int(neighbour), []).append(int(hit))
        p = Params()
        clause = conditions(p, project, where)
        rows = await conn.fetch(
            f"SELECT {_ROW_COLUMNS} FROM evidence e JOIN blobs b ON b.id = e.blob_id "
            f"WHERE e.id = ANY({p.add(sorted(near))}::bigint[]) AND {clause} ORDER BY e.id",
            *p.values,
        )
        return [(hit, _row(row)) for row in rows for hit in near[int(row[16])]]

    async def blob(self, blob_id: int) -> bytes:
        conn = await self._s.begun()
        data = await conn.fetchval("SELECT data FROM blobs WHERE id = $1", blob_id)
        if data is None:
            raise LookupError(f"blob {blob_id} is missing")
        return bytes(data)

    async def blobs(self, blob_ids: Sequence[int]) -> dict[int, bytes]:
        rows = await (await self._s.begun()).fetch(
            "SELECT id, data FROM blobs WHERE id = ANY($1::bigint[])", sorted(set(blob_ids))
        )
        return {int(row[0]): bytes(row[1]) for row in rows}

    async def document_frequencies(self, project: str, terms: Sequence[str]) -> dict[str, int]:
        project_id = await self._s.project_id(project)
        if project_id is None or not terms:
            return {}
        back = self._key.mapping(terms)
        held = await index.frequencies(await self._s.begun(), EVIDENCE_POSTINGS, project_id, list(back))
        return {back[term]: n for term, n in held.items()}

    async def search(
        self, project: str, terms: Sequence[str], where: SearchFilter, limit: int
    ) -> list[tuple[EvidenceRow, float]]:
        """Records matching any term, best BM25 (over the project's records only) first, with their score (> 0); the
        filters apply before the ranking, which covers every matching record."""
        project_id = await self._s.project_id(project)
        if project_id is None or not terms:
            return []
        conn = await self._s.begun()
        weighed = await index.weights(
            conn, EVIDENCE_POSTINGS, project_id, [self._key.term(t) for t in terms], self._s.folds
        )
        if weighed is None:
            return []
        keyed, idfs, avgdl = weighed
        p = Params(project_id, keyed, idfs, avgdl)
        clause = conditions(p, project, where)
        order = "round(s.score::numeric, 9) DESC, s.id"  # ties (equal to 9 decimals) by record id, as on SQLite
        found = await conn.fetch(
            f"SELECT {_ROW_COLUMNS}, s.score FROM (SELECT * FROM (SELECT t.evidence_id AS id, "
            f"{index.score('$4', 'e.index_length')} AS score FROM {index.scored(EVIDENCE_POSTINGS, '$1', '$2', '$3')} "
            f"JOIN evidence e ON e.id = t.evidence_id WHERE {clause} GROUP BY t.evidence_id) s ORDER BY {order} "
            f"LIMIT {p.add(limit)}) s JOIN evidence e ON e.id = s.id JOIN blobs b ON b.id = e.blob_id ORDER BY {order}",
            *p.values,
        )
        # 12 significant digits: a score summed in any row order is the same score, and ranks the same downstream
        return [(_row(list(row)[:-1]), float(f"{float(row[-1]):.12g}")) for row in found]

    async def delete(self, project: str, row: EvidenceRow, terms: str) -> bool:
        """Remove a record and its postings, and its blob when no other record of the project uses it (True when the
        blob went); rewriting the tables that held them is owed (`Store.checkpoint_wal()`). Raises NotFound when
        another call deleted the record first."""
        conn = await self._s.begun()
        length = await conn.fetchval(
            "DELETE FROM evidence WHERE id = $1 AND project = $2 RETURNING index_length", row.id, project
        )
        if length is None:
            raise NotFound(f"evidence {row.ref!r} was deleted by another call meanwhile")
        project_id = await self._s.project_id(project)
        if project_id is not None:
            counts, _ = self._key.counts(terms)
            await index.remove(conn, EVIDENCE_POSTINGS, project_id, row.id, list(counts), int(length), self._s.folds)
        await self._maintenance.owe_vacuum("evidence", "evidence_terms")
        # the blob's row lock first: a put that is about to reference it holds it (KEY SHARE) until it commits, and
        # the look for other records after the wait sees that put's records
        if await conn.fetchval("SELECT 1 FROM blobs WHERE id = $1 FOR UPDATE", row.blob_id) is None:
            return False
        if await conn.fetchval("SELECT 1 FROM evidence WHERE blob_id = $1 LIMIT 1", row.blob_id):
            return False
        await conn.execute("DELETE FROM blobs WHERE id = $1", row.blob_id)
        await self._maintenance.owe_vacuum("blobs")
        return True

    async def expired(self, project: str, now: str) -> list[EvidenceRow]:
        conn = await self._s.begun()
        found = await conn.fetch(
            f"SELECT {_ROW_COLUMNS} FROM evidence e JOIN blobs b ON b.id = e.blob_id WHERE e.project = $1 "
            "AND e.expires_at IS NOT NULL AND e.expires_at <= $2 ORDER BY e.id",
            project,
            now,
        )
        return [_row(row) for row in found]

    async def delete_orphan_blobs(self, project: str) -> int:
        """Remove the project's blobs no record uses, except those a put is about to reference (it holds them)."""
        conn = await self._s.begun()
        locked = [
            int(row[0])
            for row in await conn.fetch(
                "SELECT b.id FROM blobs b WHERE b.project = $1 AND NOT EXISTS (SELECT 1 FROM evidence e "
                "WHERE e.blob_id = b.id) ORDER BY b.id FOR UPDATE SKIP LOCKED",
                project,
            )
        ]
        status = await conn.execute(
            "DELETE FROM blobs WHERE id = ANY($1::bigint[]) AND NOT EXISTS (SELECT 1 FROM evidence e "
            "WHERE e.blob_id = blobs.id)",
            locked,
        )
        removed = int(status.split()[-1])
        if removed:
            await self._maintenance.owe_vacuum("blobs")
        return removed
