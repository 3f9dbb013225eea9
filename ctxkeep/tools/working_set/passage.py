"""Passages: the part of a long text that answers a focus, so a working set can show it instead of the whole.

The passage is the window of at most `max_chars` that holds the most distinct focus words (the
earliest such window on a tie), its edges moved to sentence boundaries (. ! ? 。！？ or a line
break) when one is near. Words are found with the search's own surface pattern (stem prefixes,
CJK bigrams), so what the search matched is what the passage shows. One pass over the text:
records can be megabytes and a working set cuts hundreds of them.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from dataclasses import dataclass

_SCAN_CHARS = 200_000
_MAX_HITS = 2_000
_SENTENCE_START = re.compile(r"(?:[.!?]\s+|[。！？]|\n)")
_SPEAKER = re.compile(r"^([^\n:]{1,40}): ")  # "Caroline: …" — kept on a passage cut from further in


@dataclass(frozen=True)
class Passage:
    text: str
    whole: bool


def _hits(text: str, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    """(position, word) of the focus words in the text's first 200,000 characters (at most 2,000)."""
    scanned = text[:_SCAN_CHARS]
    if scanned.isascii():  # lower-casing keeps positions, and a case-sensitive scan is about twice as fast
        pattern = _case_sensitive(pattern.pattern)
        scanned = scanned.lower()
    return [
        (found.start(), found.group().casefold())
        for _, found in zip(range(_MAX_HITS), pattern.finditer(scanned), strict=False)
    ]


@functools.lru_cache(maxsize=64)
def _case_sensitive(source: str) -> re.Pattern[str]:
    return re.compile(source.lower())


def _best_start(hits: list[tuple[int, str]], max_chars: int) -> int:
    """Where the window with the most distinct words begins (two pointers over the hits, in text order)."""
    best, best_count, counts, right = 0, 0, Counter[str](), 0
    for left, (start, _) in enumerate(hits):
        while right < len(hits) and hits[right][0] < start + max_chars:
            counts[hits[right][1]] += 1
            right += 1
        if len(counts) > best_count:
            best, best_count = start, len(counts)
        counts[hits[left][1]] -= 1
        if not counts[hits[left][1]]:
            del counts[hits[left][1]]
    return best


def _sentence_start(text: str, position: int, reach: int) -> int:
    """The start of the sentence holding `position` when it begins within `reach` characters before it."""
    last = None
    for found in _SENTENCE_START.finditer(text, max(0, position - reach), position):
        last = found.end()
    if last is not None:
        return last
    if position <= reach:
        return 0
    space = text.find(" ", position - reach // 2, position)
    return space + 1 if space >= 0 else position


def _sentence_end(text: str, start: int, max_chars: int) -> int:
    """The end of the last sentence that fits, when it fills at least half the window; else a word end."""
    end = min(len(text), start + max_chars)
    if end == len(text):
        return end
    cut = None
    for found in _SENTENCE_START.finditer(text, start + max_chars // 2, end):
        cut = found.start() + 1
    if cut is not None:
        return cut
    space = text.rfind(" ", start + max_chars // 2, end)
    return space if space > start else end


def best_passage(text: str, pattern: re.Pattern[str] | None, max_chars: int) -> Passage:
    """The whole text when it fits `max_chars`, else its best window (marked with … where it was cut)."""
    if len(text) <= max_chars:
        return Passage(text, whole=True)
    hits = _hits(text, pattern) if pattern else []
    start = _sentence_start(text, _best_start(hits, max_chars), max_chars // 3) if hits else 0
    end = _sentence_end(text, start, max_chars)
    shown = text[start:end].strip()
    speaker = _SPEAKER.match(text)
    lead = ((speaker.group(0) if speaker and start > speaker.end() else "") + "… ") if start else ""
    return Passage(lead + shown + (" …" if end < len(text) else ""), whole=False)
