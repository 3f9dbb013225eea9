"""Ranking evidence for a focus: BM25 hits, their conversation neighbours, one copy per blob.

A conversation turn is often understood only with the turns around it (the question before
the answer), so records of kind `message` lend part of their score to the records of the same
source stored just before and after them (weights 0.5 at distance 1, 0.3 at distance 2). Ties
go to the newer record.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from ctxkeep.storage import EvidenceRow, SearchFilter, Tx
from ctxkeep.tools.evidence import ranked_hits

NEIGHBOUR_WEIGHTS = (0.5, 0.3)
NEIGHBOUR_KINDS = frozenset({"message"})
POSTINGS_BUDGET = 8_000  # postings ranked per working set: the rarest terms first (see evidence_search.selective_terms)


@dataclass(frozen=True)
class Candidate:
    row: EvidenceRow
    score: float


def _spread(hit: EvidenceRow, near: list[EvidenceRow]) -> list[tuple[EvidenceRow, float]]:
    """Each neighbour of `hit` with the weight its distance (in records of that source) gives it."""
    before = sorted((row for row in near if row.id < hit.id), key=lambda row: -row.id)
    after = sorted((row for row in near if row.id > hit.id), key=lambda row: row.id)
    return [(row, weight) for side in (before, after) for row, weight in zip(side, NEIGHBOUR_WEIGHTS)]


async def rank_evidence(tx: Tx, project: str, focus: str, where: SearchFilter, limit: int) -> list[Candidate]:
    """The records in scope that best answer `focus`, best first (at most `limit` hits plus their neighbours)."""
    hits = await ranked_hits(tx, project, focus, where, limit, POSTINGS_BUDGET, widen_below=limit // 4)
    rows = {row.id: row for row, _ in hits}
    scores: dict[int, float] = defaultdict(float, {row.id: score for row, score in hits})
    turns = [row for row, _ in hits if row.kind in NEIGHBOUR_KINDS and row.source is not None]
    near: dict[int, list[EvidenceRow]] = defaultdict(list)
    for hit_id, row in await tx.evidence.neighbours(project, turns, where, span=len(NEIGHBOUR_WEIGHTS)):
        near[hit_id].append(row)
    own = {row.id: score for row, score in hits}
    for hit in turns:
        for row, weight in _spread(hit, near[hit.id]):
            rows.setdefault(row.id, row)
            scores[row.id] += weight * own[hit.id]
    best_per_blob: dict[str, Candidate] = {}
    for row_id, score in scores.items():
        row = rows[row_id]
        kept = best_per_blob.get(row.sha256)
        if kept is None or (score, row.id) > (kept.score, kept.row.id):
            best_per_blob[row.sha256] = Candidate(row, score)
    return sorted(best_per_blob.values(), key=lambda c: (-c.score, -c.row.id))
