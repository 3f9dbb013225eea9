"""Passages: the part of a long text that answers a focus, so a working set can show it instead of the whole.

The passage is the window of at most `max_chars` that holds the most distinct focus words (the
earliest such window on a tie), its edges moved to sentence boundaries (. ! ? 。！？ or a line
break) when one is near. Words are found with the search's own surface pattern (stem prefixes,
CJK bigrams), so what the search matched is what the passage shows. One pass over the text:
records can be megabytes and a working set cuts hundreds of them. The words found (`hits`) do not
depend on the window's size, so a caller that cuts the same text twice (a first short passage, then
a wider one) finds them once.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_SCAN_CHARS = 200_000
_MAX_HITS = 2_000
_SENTENCE_START = re.compile(r"(?:[.!?]\s+|[。！？]|\n)")
_SPEAKER = re.compile(r"^([^\n:]{1,40}): ")  # "Caroline: …" — kept on a passage cut from further in


@dataclass(frozen=True)
class Passage:
    text: str
    whole: bool


Hits = list[tuple[int, str]]


def hits(text: str, source: str | None) -> Hits:
    """(position, word) of the focus words in the text's first 200,000 characters (at most 2,000), as `finditer` of
    the surface pattern `source` (`search_terms.surface_source`, matched ignoring case) finds them. The pattern is
    compiled only for text its literals cannot be scanned for (a new focus compiles nothing on ASCII text)."""
    if source is None:
        return []
    scanned = text[:_SCAN_CHARS]
    if scanned.isascii():  # lower-casing keeps positions, and a case-sensitive scan is about twice as fast
        scanned = scanned.lower()
        literals = _ascii_literals(source)
        if literals is not None:
            return _literal_hits(scanned, literals)
        return _found(_case_sensitive(source), scanned)
    if _ascii_only(source) and not any(char in scanned for char in _FOLDS_TO_ASCII):
        # only ASCII letters can match an ASCII branch, ignoring case, and lower-casing keeps every position
        return _literal_hits(scanned.lower(), _ascii_literals(source) or ())
    return _found(_ignoring_case(source), scanned)


def _found(pattern: re.Pattern[str], scanned: str) -> Hits:
    return [
        (found.start(), found.group().casefold())
        for _, found in zip(range(_MAX_HITS), pattern.finditer(scanned), strict=False)
    ]


@functools.lru_cache(maxsize=64)
def _ignoring_case(source: str) -> re.Pattern[str]:
    return re.compile(source, re.IGNORECASE)


@functools.lru_cache(maxsize=64)
def _case_sensitive(source: str) -> re.Pattern[str]:
    return re.compile(source.lower())


# characters that match an ASCII letter ignoring case (İ ı ſ K), or whose lower case is longer (İ)
_FOLDS_TO_ASCII = ("\u0130", "\u0131", "\u017f", "\u212a")


def _is_word(char: str) -> bool:
    """A word character as the regex's `\\w` has it for text (Unicode)."""
    return char.isalnum() or char == "_"


@functools.lru_cache(maxsize=64)
def _ascii_only(source: str) -> bool:
    """Whether every branch of the pattern is an ASCII literal (none left out for holding other characters)."""
    literals = _ascii_literals(source)
    return literals is not None and len(literals) == source.count("|") + 1


_REGEX_SYNTAX = frozenset("()[]{}?*+|^$.")


def _unescaped(branch: str) -> str | None:
    """The literal text an escaped branch (`re.escape` output) matches, or None when it holds regex syntax."""
    out: list[str] = []
    escaped = False
    for char in branch:
        if escaped:
            if char.isalnum():  # \b, \w, \d …: a class or an assertion, not a character
                return None
            out.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char in _REGEX_SYNTAX:
            return None
        else:
            out.append(char)
    return None if escaped or not out else "".join(out)


@functools.lru_cache(maxsize=64)
def _ascii_literals(source: str) -> tuple[tuple[str, bool], ...] | None:
    """The branches of a surface pattern as (literal, starts at a word boundary), in branch order, for scanning
    lower-cased ASCII text; None when a branch is not a literal (then the regex scans). Branches with a character
    outside ASCII cannot match ASCII text once lower-cased, and are left out."""
    literals: list[tuple[str, bool]] = []
    for branch in source.lower().split("|"):
        bounded = branch.startswith("\\b")
        literal = _unescaped(branch[2:] if bounded else branch)
        if literal is None:
            return None
        if literal.isascii():
            literals.append((literal, bounded))
    return tuple(literals)


def _literal_hits(scanned: str, literals: tuple[tuple[str, bool], ...]) -> Hits:
    """What `finditer` over the branches finds in `scanned` (lower-cased): at each position the first branch that
    matches there, left to right, a match never overlapping the one before. Each literal's occurrences are found with
    `str.find` (a regex per literal would be compiled for every new focus), a bounded one kept only where no word
    character precedes it (lower-casing a character never changes whether it is a word character)."""
    found: list[tuple[int, int, str]] = []
    for branch, (literal, bounded) in enumerate(literals):
        found += [(start, branch, literal) for start in _occurrences(scanned, literal, bounded)]
    found.sort()
    out: Hits = []
    end = 0
    for start, _, literal in found:
        if start < end:  # overlaps the match before, or a later branch at the same start
            continue
        out.append((start, literal))
        if len(out) == _MAX_HITS:
            break
        end = start + len(literal)
    return out


def _occurrences(scanned: str, literal: str, bounded: bool) -> list[int]:
    """Where `literal` starts in `scanned` (overlapping occurrences too, as separate regexes would find them), only
    after a non-word character or at the start when `bounded` and the literal starts with a word character (after a
    word character when it does not: `\\b` before a non-word character)."""
    starts: list[int] = []
    find = scanned.find
    word_start = _is_word(literal[0])
    at = find(literal)
    while at >= 0:
        if not bounded or (at > 0 and _is_word(scanned[at - 1])) != word_start:
            starts.append(at)
        at = find(literal, at + 1)
    return starts


def _best_start(found: Hits, max_chars: int) -> int:
    """Where the window with the most distinct words begins (two pointers over the hits, in text order; the
    earliest on a tie). Stops once a window holds every distinct word: no later one can hold more."""
    ids: dict[str, int] = {}
    words = [ids.setdefault(word, len(ids)) for _, word in found]
    if len(ids) == 1:  # every window holds the one word: the first one starts the earliest
        return found[0][0]
    starts = [start for start, _ in found]
    counts = [0] * len(ids)
    best, best_count, distinct, right, total = 0, 0, 0, 0, len(found)
    for left in range(total):
        edge = starts[left] + max_chars
        while right < total and starts[right] < edge:
            word = words[right]
            distinct += counts[word] == 0
            counts[word] += 1
            right += 1
        if distinct > best_count:
            best, best_count = starts[left], distinct
            if best_count == len(ids):
                break
        word = words[left]
        counts[word] -= 1
        distinct -= counts[word] == 0
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


def best_passage(text: str, source: str | None, max_chars: int, found: Hits | None = None) -> Passage:
    """The whole text when it fits `max_chars`, else its best window (marked with … where it was cut); `found`: the
    text's `hits` for the surface pattern `source`, when the caller has them already."""
    if len(text) <= max_chars:
        return Passage(text, whole=True)
    found = hits(text, source) if found is None else found
    start = _sentence_start(text, _best_start(found, max_chars), max_chars // 3) if found else 0
    end = _sentence_end(text, start, max_chars)
    shown = text[start:end].strip()
    speaker = _SPEAKER.match(text)
    lead = ((speaker.group(0) if speaker and start > speaker.end() else "") + "… ") if start else ""
    return Passage(lead + shown + (" …" if end < len(text) else ""), whole=False)
