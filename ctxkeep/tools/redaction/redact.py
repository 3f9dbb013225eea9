"""Secret redaction before storage: what must never sit in a database in clear text.

Each rule replaces only the secret itself with `[REDACTED:<kind>]`, keeping the words around it (a header
name, a URL's user, an env variable's name) so the text stays readable. Secrets are provider formats
(recognised anywhere) and literal values assigned to secret-named keys; expressions, calls, annotations,
placeholders and documentation examples are never touched, so code read back through evidence is the code
(`ctxkeep.tools.redaction` holds the rules).
"""

from __future__ import annotations

import bisect
import functools
import itertools
from collections.abc import Callable, Iterable

from ctxkeep.text import LazyPattern
from ctxkeep.tools.redaction import RULES, Context

# Every pattern some rule needs, once: each is searched once per text, and a rule runs when one of its own is there.
_NEEDS = list(dict.fromkeys(need for rule in RULES for need in rule.needs))
_REGEX_SYNTAX = frozenset("\\^$.|?*+()[]{}")


def _literals(need: str) -> tuple[str, ...] | None:
    """The strings a need matches, when it is only literals, escaped punctuation, classes of letters (`[pousr]`) and
    groups of plain alternatives (`(?:live|test)`); None for any other syntax. Searching for them is searching for the
    need, with no regex to compile (a hook process redacts once or twice)."""
    found, at = [""], 0
    while at < len(need):
        char = need[at]
        if char == "\\" and at + 1 < len(need) and not need[at + 1].isalnum():
            choices, at = [need[at + 1]], at + 2
        elif char == "[" and "]" in need[at:]:
            end = need.index("]", at)
            choices, at = list(need[at + 1 : end]), end + 1
            if not choices or any(not c.isalnum() for c in choices):
                return None
        elif need.startswith("(?:", at) and ")" in need[at:]:
            end = need.index(")", at)
            choices, at = need[at + 3 : end].split("|"), end + 1
            if any(not c or not _REGEX_SYNTAX.isdisjoint(c) for c in choices):
                return None
        elif char in _REGEX_SYNTAX:
            return None
        else:
            choices, at = [char], at + 1
        if at < len(need) and need[at] in "?*+{":  # a quantifier on the piece: not a plain alternation
            return None
        found = [start + choice for start in found for choice in choices]
    return tuple(found)


def _head(need: str) -> str:
    """The literal start every match of a need has ("" when it starts with syntax)."""
    end = next((i for i, char in enumerate(need) if char in _REGEX_SYNTAX), len(need))
    return need[:end]


def _searcher(need: str) -> Callable[[str], bool]:
    """How to look for a need: a literal (or a plain alternation of literals) as substrings; any other pattern only
    where its literal start occurs, compiled the first time (never at import)."""
    if _REGEX_SYNTAX.isdisjoint(need):
        return lambda text: need in text
    literals = _literals(need)
    if literals is not None:
        return lambda text: any(literal in text for literal in literals)
    pattern, head = LazyPattern(need), _head(need)
    return lambda text: head in text and pattern.search(text) is not None


def _finder(need: str) -> Callable[[str, int], int]:
    """Where a need next occurs in a text from a position (-1: nowhere)."""
    if _REGEX_SYNTAX.isdisjoint(need):
        return lambda text, start: text.find(need, start)
    literals = _literals(need)
    if literals is not None:
        return functools.partial(_first_of, literals)
    return functools.partial(_next_match, LazyPattern(need), _head(need))


def _first_of(literals: tuple[str, ...], text: str, start: int) -> int:
    places = [place for place in (text.find(literal, start) for literal in literals) if place >= 0]
    return min(places) if places else -1


def _next_match(pattern: LazyPattern, head: str, text: str, start: int) -> int:
    if text.find(head, start) < 0:
        return -1
    match = pattern.search(text, start)
    return match.start() if match else -1


_SEARCHES = [(_searcher(need), need == need.lower()) for need in _NEEDS]
_FINDERS = [_finder(need) for need in _NEEDS]
_RULE_NEEDS = [frozenset(_NEEDS.index(need) for need in rule.needs) for rule in RULES]


def _present(text: str, lowered: str, among: Iterable[int]) -> set[int]:
    """Which of the needs `among` (indexes into _NEEDS) the text holds."""
    return {i for i in among if _SEARCHES[i][0](lowered if _SEARCHES[i][1] else text)}


_EVERY_NEED = range(len(_NEEDS))


def _found(context: Context, among: Iterable[int] = _EVERY_NEED) -> list[tuple[int, int, int, str]]:
    """Every span the rules find, as (start, end, rule order, kind); only the needs `among` are looked for (the others
    are known to be absent)."""
    present = _present(context.text, context.lowered, among)
    found: list[tuple[int, int, int, str]] = []
    if not present:
        return found
    for order, (rule, needs) in enumerate(zip(RULES, _RULE_NEEDS, strict=True)):
        if needs.isdisjoint(present):
            continue
        for start, end, kind in rule.find(context):
            start, end = context.trimmed(start, end)
            if start < end:
                found.append((start, end, order, kind))
    return found


def _merged(found: list[tuple[int, int, int, str]]) -> list[tuple[int, int, str]]:
    """Overlapping spans joined into one, so no part of a secret one rule found stays because another rule found
    an overlapping span; the joined span is named by the first rule (providers before assignments)."""
    merged: list[tuple[int, int, int, str]] = []  # start, end, order of the naming rule, kind
    for start, end, order, kind in sorted(found):
        if merged and start < merged[-1][1]:
            first, last, named_by, name = merged[-1]
            merged[-1] = (first, max(last, end), min(named_by, order), name if named_by <= order else kind)
        else:
            merged.append((start, end, order, kind))
    return [(start, end, kind) for start, end, _, kind in merged]


def redact_secrets(text: str) -> tuple[str, int]:
    """The text with every recognised secret replaced by a marker, and how many were replaced."""
    return _redacted(text, _EVERY_NEED)


def redact_each(texts: list[str]) -> list[tuple[str, int]]:
    """`redact_secrets` of each text, for many short texts at once (the fields of a task state): a need none of them
    holds is looked for once, in all of them, instead of once in each. The same results, in the same order."""
    if len(texts) < 2:
        return [redact_secrets(text) for text in texts]
    joined = "\n".join(texts)  # a need absent from the joined text is absent from each part
    lowered = joined.lower()
    if len(lowered) != len(joined):  # rare letters change length when lowered: offsets would not line up
        among = sorted(_present(joined, lowered, _EVERY_NEED))
        return [_redacted(text, among) for text in texts]
    needs = _needs_by_text(texts, joined, lowered)
    return [_redacted(text, needs[i]) if i in needs else (text, 0) for i, text in enumerate(texts)]


def _needs_by_text(texts: list[str], joined: str, lowered: str) -> dict[int, list[int]]:
    """For each text (by index) that may hold a need, the needs found where it stands in `joined`; a need is looked
    for at most once per text (after a hit, the search goes on from the next text)."""
    starts = list(itertools.accumulate((len(text) + 1 for text in texts[:-1]), initial=0))
    found: dict[int, list[int]] = {}
    for need, ((_, folded), find) in enumerate(zip(_SEARCHES, _FINDERS, strict=True)):
        where = lowered if folded else joined
        at = find(where, 0)
        while at != -1:
            index = bisect.bisect_right(starts, at) - 1
            found.setdefault(index, []).append(need)
            if index + 1 == len(starts):
                break
            at = find(where, starts[index + 1])
    return found


def _redacted(text: str, among: Iterable[int]) -> tuple[str, int]:
    if len(text) < 8:
        return text, 0
    spans = _merged(_found(Context(text), among))
    if not spans:
        return text, 0
    parts, last = [], 0
    for start, end, kind in spans:
        parts += [text[last:start], f"[REDACTED:{kind}]"]
        last = end
    parts.append(text[last:])
    return "".join(parts), len(spans)
