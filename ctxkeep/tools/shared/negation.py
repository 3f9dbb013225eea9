"""Negated clauses: "must not execute", "no final recommendation", "不能推荐".

A negation is kept only when its clause survives under a negation, not merely when a
negation word remains somewhere. The clause is the text after the marker up to the end of
its sentence part, compared in matching form (`ctxkeep.text.match_key`). Two items that differ
only in which negation word they use ("do not" / "must not" / "never", "不能" / "禁止") are
the same item.
"""

from __future__ import annotations

import functools
import re

from ctxkeep.text import LazyPattern, match_key

_ENGLISH = [
    "must not",
    "mustn't",
    "do not",
    "don't",
    "does not",
    "doesn't",
    "did not",
    "should not",
    "shouldn't",
    "shall not",
    "may not",
    "cannot",
    "can not",
    "can't",
    "will not",
    "won't",
    "is not",
    "are not",
    "never",
    "not",
    "no",
    "without",
    "avoid",
    "forbidden to",
    "prohibited from",
]
_CHINESE = [
    "不可以",
    "不应该",
    "不需要",
    "不能",
    "不要",
    "不得",
    "不可",
    "不许",
    "不准",
    "不应",
    "不会",
    "不用",
    "禁止",
    "严禁",
    "切勿",
    "请勿",
    "无需",
    "没有",
    "未经",
]
# 不 alone negates ("不推荐"), except in words where it does not ("不同" different, "不过" but …).
_BARE_BU = "不(?!同|过|断|仅|但|管|论|少|久|错|然|如|止|一|光)"
_ALTERNATIVES = "|".join(
    [r"\b" + re.escape(m) + r"\b" for m in sorted(_ENGLISH, key=len, reverse=True)]
    + [re.escape(m) for m in sorted(_CHINESE, key=len, reverse=True)]
    + [_BARE_BU]
)  # the markers as one alternation, longest first: what `_MARKER` finds, written plainly
# The same alternation, grouped behind a look at the first character, so most positions are passed over at once
# (~10x faster over a summary than trying the 45 alternatives at each position); tests/tools/shared/test_negation_markers.py
# checks the two find the same markers.
_MARKER = (
    rf"\b(?=[{''.join(sorted({m[0] for m in _ENGLISH}))}])(?:"
    + "|".join(re.escape(m) for m in sorted(_ENGLISH, key=len, reverse=True))
    + rf")\b|(?=[{''.join(sorted({m[0] for m in _CHINESE} | {'不'}))}])(?:"
    + "|".join([re.escape(m) for m in sorted(_CHINESE, key=len, reverse=True)] + [_BARE_BU])
    + ")"
)
_MARKER_RE = LazyPattern(_MARKER)
# A clause runs to the end of its sentence part: punctuation, "and"/"or"/"but", or the next negation.
_CLAUSE_END = LazyPattern(r"[.;:!?,，。；：！？、\n]|\s(?:and|or|but)\s")
_ENDS_WITH_MARKER = LazyPattern(rf"(?:{_MARKER})\s*$")  # only checkpoint verification needs it
_LOOKBEHIND = 24  # longer than any marker plus a space: where a marker before a clause can start


def _normal(text: str) -> str:
    return match_key(text.replace("\u2019", "'").replace("\u02bc", "'"))


@functools.lru_cache(maxsize=2048)
def negated_clauses(text: str) -> tuple[str, ...]:
    """The clauses `text` negates, in matching form, in order of appearance."""
    normal = _normal(text)
    markers = list(_MARKER_RE.finditer(normal))
    clauses: list[str] = []
    for index, marker in enumerate(markers):
        limit = markers[index + 1].start() if index + 1 < len(markers) else len(normal)
        start = marker.end()
        while start < limit and normal[start].isspace():
            start += 1
        end = _CLAUSE_END.search(normal, start, limit)
        clause = normal[start : end.start() if end else limit].strip()
        if clause and clause not in clauses:
            clauses.append(clause)
    return tuple(clauses)


@functools.lru_cache(maxsize=4096)
def negation_form(text: str) -> str:
    """The item with every negation word replaced by one token: equal forms are the same rule."""
    return " ".join(_MARKER_RE.sub(" ¬ ", _normal(text)).split())


def appears_unnegated(clause: str, text: str) -> bool:
    """True when `clause` occurs in `text` somewhere without a negation right before it."""
    haystack = _normal(text)
    start = haystack.find(clause)
    while start >= 0:
        if not _ENDS_WITH_MARKER.search(haystack[max(0, start - _LOOKBEHIND) : start]):
            return True
        start = haystack.find(clause, start + 1)
    return False


def has_negation(text: str) -> bool:
    """True when `text` holds a negation word anywhere ("not", "never", "no", "不要", …)."""
    return _MARKER_RE.search(_normal(text)) is not None
