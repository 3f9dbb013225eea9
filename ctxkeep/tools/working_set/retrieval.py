"""Ranking evidence for a focus: BM25 hits, priors for what the focus names, their conversation neighbours, one
copy per blob.

Two priors raise a hit's own score before anything spreads: a record whose speaker (the "Name: " a message starts
with) or source the focus names (x1.3), and a record dated in the month the focus names, e.g. "in May" or
"May 2023" (x2; effective_at, else when it was stored). A conversation turn is often understood only with the
turns around it (the question before the answer), so records of kind `message` then lend part of their score to the
records of the same source stored just before and after them (weights 0.5 at distance 1, 0.3 at distance 2). Ties
go to the newer record. (Each change measured on the shared LoCoMo half, bench/working_set.py.)
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

from ctxkeep.storage import EvidenceRow, SearchFilter, Tx
from ctxkeep.tools.evidence import CONTENTS, ranked_hits

NEIGHBOUR_WEIGHTS = (0.5, 0.3)
NEIGHBOUR_KINDS = frozenset({"message"})
POSTINGS_BUDGET = 3_000  # postings ranked per working set: the rarest terms first (see evidence_search.selective_terms)
NAMED_PRIOR = 0.3
MONTH_PRIOR = 1.0
MONTHS = (
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
)
_MONTH = re.compile(r"\b(" + "|".join(MONTHS) + r")\b(?:\s+\d{1,2}(?:st|nd|rd|th)?\b,?)?(?:\s+(\d{4}))?", re.IGNORECASE)
_SPEAKER = re.compile(r"^([^\n:]{1,40}): ")
_WORD = re.compile(r"\w{3,}")


@dataclass(frozen=True)
class Candidate:
    row: EvidenceRow
    score: float


@dataclass(frozen=True)
class Ranked:
    """Candidates best first; `complete` when fewer hits than asked for matched (a larger limit would add none)."""

    candidates: list[Candidate]
    complete: bool


def _spread(hit: EvidenceRow, near: list[EvidenceRow]) -> list[tuple[EvidenceRow, float]]:
    """Each neighbour of `hit` with the weight its distance (in records of that source) gives it."""
    before = sorted((row for row in near if row.id < hit.id), key=lambda row: -row.id)
    after = sorted((row for row in near if row.id > hit.id), key=lambda row: row.id)
    return [(row, weight) for side in (before, after) for row, weight in zip(side, NEIGHBOUR_WEIGHTS, strict=False)]


def named_months(focus: str) -> set[tuple[int, str | None]]:
    """(month, year or None) for each month the focus names ("in May", "on 8 May, 2023", "May 2023")."""
    return {(MONTHS.index(found.group(1).lower()) + 1, found.group(2)) for found in _MONTH.finditer(focus)}


async def _priors(tx: Tx, focus: str, hits: list[tuple[EvidenceRow, float]]) -> dict[int, float]:
    """The factor each hit's score is multiplied by: a named speaker or source, a named month."""
    words = {w.casefold() for w in _WORD.findall(focus)}
    months = named_months(focus)
    texts = await CONTENTS.contents(tx, [row for row, _ in hits if row.kind in NEIGHBOUR_KINDS]) if words else {}
    factors: dict[int, float] = {}
    for row, _ in hits:
        factor = 1.0
        speaker = _SPEAKER.match(texts.get(row.ref, "")[:64])
        named = {w.casefold() for w in _WORD.findall((speaker.group(1) if speaker else "") + " " + (row.source or ""))}
        if named & words:
            factor += NAMED_PRIOR
        when = row.effective_at or row.created_at
        if any(int(when[5:7]) == month and (year is None or when[:4] == year) for month, year in months):
            factor += MONTH_PRIOR
        factors[row.id] = factor
    return factors


async def rank_evidence(tx: Tx, project: str, focus: str, where: SearchFilter, limit: int) -> Ranked:
    """The records in scope that best answer `focus`, best first (at most `limit` hits plus their neighbours)."""
    found = await ranked_hits(tx, project, focus, where, limit, POSTINGS_BUDGET, widen_below=limit // 4)
    factors = await _priors(tx, focus, found)
    hits = [(row, score * factors[row.id]) for row, score in found]
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
    return Ranked(sorted(best_per_blob.values(), key=lambda c: (-c.score, -c.row.id)), len(found) < limit)
