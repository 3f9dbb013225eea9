"""Index terms: how text is cut into the words the full-text index holds and queries look up.

English words are stemmed ("running" and "runs" both index as "run"); Chinese, Japanese and Korean runs are indexed
as unigrams and bigrams so 1–2 character queries ("运费") match. The terms here are plain text and never stored as
text: the index keys each one with its file's own random key before it reaches a table (see the backend). They live
in storage because the index is rebuilt from stored content with exactly these rules (`INDEX_VERSION` names them).
"""

from __future__ import annotations

import functools
import re
import unicodedata

import Stemmer

INDEX_VERSION = 2  # 1: terms hashed with a public constant; 2: keyed per file, one index per project
MAX_INDEXED_CHARS = 2_000_000
MAX_QUERY_TERMS = 64

_WORD = re.compile(r"[^\W_]+")
_CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "down",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "tell",
        "know",
        "think",
        "like",
        "also",
        "get",
        "got",
        "yes",
        "ok",
    ]
)
_stemmer = Stemmer.Stemmer("english")


@functools.lru_cache(maxsize=100_000)
def stem(word: str) -> str:
    return str(_stemmer.stemWord(word)) if word.isascii() and word.isalpha() else word


def words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def split_cjk(word: str) -> tuple[list[str], list[str]]:
    """A word's CJK runs and its other parts."""
    return _CJK_RUN.findall(word), [part for part in _CJK_RUN.split(word) if part]


def cjk_grams(run: str, unigrams: bool) -> list[str]:
    bigrams = [run[i : i + 2] for i in range(len(run) - 1)]
    return list(run) + bigrams if unigrams or len(run) == 1 else bigrams


def index_terms(text: str) -> str:
    """The terms of `text` (its first 2,000,000 characters), space-separated, in order, for the index."""
    text = text[:MAX_INDEXED_CHARS]
    found = words(text)
    if not _CJK_RUN.search(text):
        return " ".join(map(stem, found))
    terms: list[str] = []
    for word in found:
        runs, others = split_cjk(word)
        for run in runs:
            terms += cjk_grams(run, unigrams=True)
        terms += map(stem, others)
    return " ".join(terms)


def query_terms(query: str) -> list[str]:
    """The distinct terms a query looks up: stopwords dropped, CJK as bigrams (a unigram when alone)."""
    terms: list[str] = []
    for word in words(query):
        runs, others = split_cjk(word)
        for run in runs:
            terms += cjk_grams(run, unigrams=False)
        terms += [stem(part) for part in others if part not in STOPWORDS]
    return list(dict.fromkeys(terms))[:MAX_QUERY_TERMS]


def evidence_terms(title: str | None, content: str) -> str:
    """What an evidence record is indexed under: its title and its (redacted) content."""
    return index_terms(f"{title or ''}\n{content}")


def memory_terms(key: str, content: str) -> str:
    """What a memory version is indexed under: its key and its content."""
    return index_terms(f"{key}\n{content}")
