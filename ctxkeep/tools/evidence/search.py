"""evidence_search: BM25 full-text search over this project's evidence, with snippets.

Any string is a valid query: it is cut into terms (stemmed English words, CJK bigrams) and
looked up as hashes, so quotes, AND/OR/NOT, NEAR(, *, -, ^ and parentheses are plain text.
"""

from __future__ import annotations

import re

from ctxkeep.models.evidence import EvidenceHit, EvidenceSearchRequest, EvidenceSearchResult
from ctxkeep.storage import EvidenceRow, SearchFilter, Tx
from ctxkeep.text import utc_text
from ctxkeep.tokens import count_tokens
from ctxkeep.tools.evidence.inbox import take_offloads
from ctxkeep.tools.evidence.records import CONTENTS
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.shared.search_terms import query_terms, surface_pattern

POSTINGS_BUDGET = 20_000
SNIPPET_BEFORE = 80
SNIPPET_AFTER = 200
_SCAN_CHARS = 400_000


def selective_terms(terms: list[str], frequencies: dict[str, int], budget: int = POSTINGS_BUDGET) -> list[str]:
    """The rarest terms whose postings fit the budget (at least the rarest one), so a query over a large
    store stays fast; the terms left out are the most common ones, which BM25 weighs least anyway."""
    chosen: list[str] = []
    total = 0
    for frequency, term in sorted((frequencies[t], t) for t in terms if t in frequencies):
        if chosen and total + frequency > budget:
            break
        chosen.append(term)
        total += frequency
    return chosen


async def ranked_hits(
    tx: Tx,
    project: str,
    query: str,
    where: SearchFilter,
    limit: int,
    postings_budget: int = POSTINGS_BUDGET,
    widen_below: int | None = None,
) -> list[tuple[EvidenceRow, float]]:
    """The best `limit` records for `query` with their BM25 score, ranking the rarest terms within `postings_budget`;
    all the terms are ranked again when fewer than `widen_below` (default `limit`) records match (the rare terms
    may live in other projects, or the filters may leave too few)."""
    terms = query_terms(query)
    if not terms:
        return []
    frequencies = await tx.evidence.document_frequencies(project, terms)
    chosen = selective_terms(terms, frequencies, postings_budget)
    found = await tx.evidence.search(project, chosen, where, limit) if chosen else []
    if len(found) < (limit if widen_below is None else widen_below) and len(chosen) < len(frequencies):
        found = await tx.evidence.search(project, sorted(frequencies), where, limit)
    return found


def make_snippet(text: str, pattern: re.Pattern[str] | None) -> str:
    """About 280 characters around the first match of the query's words (the start when none is found)."""
    found = pattern.search(text, 0, _SCAN_CHARS) if pattern else None
    start = max(0, found.start() - SNIPPET_BEFORE) if found else 0
    end = min(len(text), (found.end() if found else 0) + SNIPPET_AFTER)
    window = " ".join(text[start:end].split())
    return ("… " if start else "") + window + (" …" if end < len(text) else "")


async def evidence_search(scope: Scope, req: EvidenceSearchRequest) -> EvidenceSearchResult:
    """Best-matching records first; an empty list when nothing matches (never an error for odd queries)."""
    await take_offloads(scope)  # outputs the hooks offloaded are evidence like any other
    where = SearchFilter(
        task_id=req.task_id,
        kind=req.kind,
        tags=sorted(set(req.tags)),
        valid_at=utc_text(req.as_of),
        exclude_expired_at=None if req.include_expired or req.as_of else utc_text(scope.clock()),
    )
    pattern = surface_pattern(req.query)
    async with scope.store.snapshot() as tx:
        found = await ranked_hits(tx, scope.project, req.query, where, req.limit)
        texts = await CONTENTS.contents(tx, [row for row, _ in found])  # one read for the blobs not cached
    best = max((score for _, score in found), default=1.0) or 1.0
    ranked = [_hit(row, rank, score / best, texts[row.ref], pattern) for rank, (row, score) in enumerate(found, 1)]
    dumped = [hit.model_dump_json() for hit in ranked]
    if sum(len(text.encode("utf-8", "surrogatepass")) for text in dumped) <= req.max_tokens:
        return EvidenceSearchResult(hits=ranked)  # a token holds at least one byte: all of them fit, uncounted
    hits: list[EvidenceHit] = []
    used = 0
    for hit, text in zip(ranked, dumped, strict=True):
        cost = count_tokens(text)
        if used + cost > req.max_tokens:
            return EvidenceSearchResult(hits=hits, truncated=True)
        hits.append(hit)
        used += cost
    return EvidenceSearchResult(hits=hits)


def _short(text: str | None, limit: int = 200) -> str | None:
    return text if text is None or len(text) <= limit else text[:limit] + "…"


def _hit(row: EvidenceRow, rank: int, score: float, text: str, pattern: re.Pattern[str] | None) -> EvidenceHit:
    """A hit; `score` is relative to the best hit (BM25 scores alone mean nothing to a reader: 4.76e-06)."""
    return EvidenceHit(
        ref=row.ref,
        title=_short(row.title),
        snippet=make_snippet(text, pattern),
        rank=rank,
        score=round(max(score, 0.001), 3),
        kind=row.kind,
        source=_short(row.source),
        task_id=row.task_id,
        tokens=row.tokens,
        created_at=row.created_at,  # type: ignore[arg-type]
    )
