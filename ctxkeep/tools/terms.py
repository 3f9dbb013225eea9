"""Search terms: how text is cut into the words the full-text index stores and queries look up.

English words are stemmed ("running" and "runs" both index as "run"); Chinese, Japanese and
Korean runs are indexed as unigrams and bigrams so 1–2 character queries ("运费") match. Each
term is stored as a short keyed hash, not as text: the index holds no readable words, so text
deleted from the store leaves no readable trace in the index's old segments, and no user
string ever reaches the FTS query syntax (queries are hashes too).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import unicodedata

import Stemmer

INDEX_VERSION = 1
MAX_INDEXED_CHARS = 2_000_000
MAX_QUERY_TERMS = 64

_WORD = re.compile(r"[^\W_]+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
_STOPWORDS = frozenset(
    "a about above after again against all am an and any are as at be because been before being below between "
    "both but by can could did do does doing down during each few for from further had has have having he her "
    "here hers herself him himself his how i if in into is it its itself just me more most my myself no nor not "
    "now of off on once only or other our ours ourselves out over own same she should so some such than that "
    "the their theirs them themselves then there these they this those through to too under until up very was "
    "we were what when where which while who whom why will with would you your yours yourself yourselves "
    "tell know think like also get got yes ok".split()
)
_stemmer = Stemmer.Stemmer("english")


@functools.lru_cache(maxsize=100_000)
def _stem(word: str) -> str:
    return str(_stemmer.stemWord(word)) if word.isascii() and word.isalpha() else word


@functools.lru_cache(maxsize=200_000)
def _hashed(term: str) -> str:
    return hashlib.blake2b(term.encode("utf-8"), digest_size=6, person=b"ctxkeep-terms").hexdigest()


@functools.lru_cache(maxsize=200_000)
def _word_hash(word: str) -> str:
    return _hashed(_stem(word))


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def _split_cjk(word: str) -> tuple[list[str], list[str]]:
    """A word's CJK runs and its other parts."""
    return _CJK_RUN.findall(word), [part for part in _CJK_RUN.split(word) if part]


def _cjk_grams(run: str, unigrams: bool) -> list[str]:
    bigrams = [run[i:i + 2] for i in range(len(run) - 1)]
    return list(run) + bigrams if unigrams or len(run) == 1 else bigrams


def index_terms(text: str) -> str:
    """The hashed terms of `text` (its first 2,000,000 characters), space-separated, for the index."""
    text = text[:MAX_INDEXED_CHARS]
    words = _words(text)
    if not _CJK_RUN.search(text):
        return " ".join(map(_word_hash, words))
    hashes: list[str] = []
    for word in words:
        runs, others = _split_cjk(word)
        for run in runs:
            hashes += map(_hashed, _cjk_grams(run, unigrams=True))
        hashes += map(_word_hash, others)
    return " ".join(hashes)


def query_terms(query: str) -> list[str]:
    """The distinct hashed terms a query looks up: stopwords dropped, CJK as bigrams (unigram when alone)."""
    terms: list[str] = []
    for word in _words(query):
        runs, others = _split_cjk(word)
        for run in runs:
            terms += _cjk_grams(run, unigrams=False)
        terms += [_stem(part) for part in others if part not in _STOPWORDS]
    return list(dict.fromkeys(_hashed(term) for term in terms))[:MAX_QUERY_TERMS]


def surface_pattern(query: str) -> re.Pattern[str] | None:
    """A regex that finds the query's words in raw text (stem prefixes), for snippets."""
    parts = []
    for word in _words(query):
        runs, others = _split_cjk(word)
        parts += [re.escape(gram) for run in runs for gram in _cjk_grams(run, unigrams=False)]
        for part in others:
            if part not in _STOPWORDS:
                shared = os.path.commonprefix([part, _stem(part)])  # "studies"/"studi" -> "studi"
                shared = shared[:-1] if len(shared) > 4 else shared  # -> "stud", which "studying" holds too
                parts.append(r"\b" + re.escape(shared if len(shared) >= 3 else part))
    return re.compile("|".join(sorted(set(parts), key=len, reverse=True)), re.IGNORECASE) if parts else None
