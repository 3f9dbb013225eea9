"""Passages: the part of a long text that answers a focus, so a working set can show it instead of the whole.

A text is cut into sentences (line breaks and . ! ? 。！？); the passage is the sentence holding
the most distinct focus terms (the first one on a tie), grown with its neighbours while it
stays under `max_chars`. Terms are the index's own (stemmed, CJK bigrams), so what the search
matched is what the passage shows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ctxkeep.tools.terms import index_terms

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")
_SCAN_CHARS = 200_000
_WORD = re.compile(r"[^\W_]+")
_SPEAKER = re.compile(r"^([^\n:]{1,40}): ")  # "Caroline: …" — kept on a passage cut from further in


@dataclass(frozen=True)
class Passage:
    text: str
    whole: bool


def sentences(text: str) -> list[str]:
    return [part.strip() for part in _SENTENCE_END.split(text[:_SCAN_CHARS]) if part.strip()]


def _clip(text: str, max_chars: int, focus_terms: frozenset[str]) -> str:
    """`text` cut to `max_chars`, starting a little before its first focus term when that lies further in."""
    if len(text) <= max_chars:
        return text
    start = 0
    for word in _WORD.finditer(text):
        if focus_terms.intersection(index_terms(word.group()).split()):
            start = max(0, word.start() - max_chars // 4) if word.end() > max_chars else 0
            break
    return ("…" if start else "") + text[start:start + max_chars].strip() + "…"


def best_passage(text: str, focus_terms: frozenset[str], max_chars: int) -> Passage:
    """The whole text when it fits `max_chars`, else the best-matching sentences within it (marked with …)."""
    if len(text) <= max_chars:
        return Passage(text, whole=True)
    parts = sentences(text)
    if not parts:
        return Passage(_clip(text, max_chars, focus_terms), whole=False)
    matches = [len(focus_terms.intersection(index_terms(part).split())) for part in parts]
    best = max(range(len(parts)), key=lambda i: (matches[i], -i))
    first, last = best, best
    size = len(parts[best])
    while True:
        grown = False
        for candidate in (last + 1, first - 1):
            if 0 <= candidate < len(parts) and size + 1 + len(parts[candidate]) <= max_chars:
                size += 1 + len(parts[candidate])
                first, last = min(first, candidate), max(last, candidate)
                grown = True
        if not grown:
            break
    shown = _clip(" ".join(parts[first:last + 1]), max_chars, focus_terms)
    speaker = _SPEAKER.match(text)
    lead = (speaker.group(0) if speaker else "") + "… " if first else ""
    return Passage(lead + shown + (" …" if last < len(parts) - 1 else ""), whole=False)
