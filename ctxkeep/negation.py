"""Negated clauses: "must not execute", "no final recommendation", "不能推荐".

A negation is kept only when its clause survives under a negation, not merely when a
negation word remains somewhere. The clause is the text after the marker up to the end
of its sentence part, compared in matching form (`ctxkeep.text.match_key`).
"""

from __future__ import annotations

import functools
import re

from ctxkeep.text import match_key

_ENGLISH = [
    "must not", "mustn't", "do not", "don't", "does not", "doesn't", "did not", "should not",
    "shouldn't", "shall not", "may not", "cannot", "can not", "can't", "will not", "won't",
    "is not", "are not", "never", "not", "no", "without", "avoid", "forbidden to", "prohibited from",
]
_CHINESE = [
    "不可以", "不应该", "不需要", "不能", "不要", "不得", "不可", "不许", "不准", "不应", "不会",
    "不用", "禁止", "严禁", "切勿", "请勿", "无需", "没有", "未经", "勿", "别",
]
_MARKER = "|".join(
    [r"\b" + re.escape(m) + r"\b" for m in sorted(_ENGLISH, key=len, reverse=True)]
    + [re.escape(m) for m in sorted(_CHINESE, key=len, reverse=True)]
)
_NEGATED = re.compile(rf"(?:{_MARKER})\s*(?P<clause>[^.;:!?,，。；：！？、\n]+)")
_ENDS_WITH_MARKER = re.compile(rf"(?:{_MARKER})\s*$")


@functools.lru_cache(maxsize=2048)
def negated_clauses(text: str) -> tuple[str, ...]:
    """The clauses `text` negates, in matching form, in order of appearance."""
    clauses: list[str] = []
    for found in _NEGATED.finditer(match_key(text)):
        clause = found.group("clause").strip()
        if clause and clause not in clauses:
            clauses.append(clause)
    return tuple(clauses)


def appears_unnegated(clause: str, text: str) -> bool:
    """True when `clause` occurs in `text` somewhere without a negation right before it."""
    haystack = match_key(text)
    start = haystack.find(clause)
    while start >= 0:
        if not _ENDS_WITH_MARKER.search(haystack[:start]):
            return True
        start = haystack.find(clause, start + 1)
    return False

