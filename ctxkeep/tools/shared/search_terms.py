"""Search terms as tools use them: the index's terms (`ctxkeep.storage.index_terms`) and the surface pattern for snippets.

Text is cut into terms by the rules the index is built with (stemmed English, CJK unigrams and bigrams); the store
keys every term with its file's random key before it reaches the index, so the index holds no readable words and no
hash anyone can compute without the file's key, and no user string ever reaches the FTS query syntax.
"""

from __future__ import annotations

import os
import re

from ctxkeep.storage.index_terms import (
    INDEX_VERSION,
    MAX_INDEXED_CHARS,
    MAX_QUERY_TERMS,
    STOPWORDS,
    cjk_grams,
    evidence_terms,
    index_terms,
    memory_terms,
    query_terms,
    split_cjk,
    stem,
    words,
)

__all__ = [
    "INDEX_VERSION",
    "MAX_INDEXED_CHARS",
    "MAX_QUERY_TERMS",
    "evidence_terms",
    "index_terms",
    "memory_terms",
    "query_terms",
    "surface_pattern",
    "surface_source",
]


def surface_pattern(query: str) -> re.Pattern[str] | None:
    """A regex that finds the query's words in raw text (stem prefixes), for snippets."""
    source = surface_source(query)
    return re.compile(source, re.IGNORECASE) if source else None


def surface_source(query: str) -> str | None:
    """The source of `surface_pattern` (to be matched ignoring case), for a caller that may never need it compiled."""
    parts = []
    for word in words(query):
        runs, others = split_cjk(word)
        parts += [re.escape(gram) for run in runs for gram in cjk_grams(run, unigrams=False)]
        for part in others:
            if part not in STOPWORDS:
                shared = os.path.commonprefix([part, stem(part)])  # "studies"/"studi" -> "studi"
                shared = shared[:-1] if len(shared) > 4 else shared  # -> "stud", which "studying" holds too
                parts.append(r"\b" + re.escape(shared if len(shared) >= 3 else part))
    return "|".join(sorted(set(parts), key=len, reverse=True)) if parts else None
