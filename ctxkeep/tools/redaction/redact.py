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
import re
from collections.abc import Callable, Iterable

from ctxkeep.tools.redaction import RULES, Context

# Every pattern some rule needs, once: each is searched once per text, and a rule runs when one of its own is there.
_NEEDS = list(dict.fromkeys(need for rule in RULES for need in rule.needs))
_REGEX_SYNTAX = frozenset("\\^$.|?*+()[]{}")


def _searcher(need: str) -> Callable[[str], bool]:
    """How to look for a need: a literal is looked for as a substring (no regex to compile at import)."""
    if _REGEX_SYNTAX.isdisjoint(need):
        return lambda text: need in text
    return functools.partial(_found_by, re.compile(need))


def _found_by(pattern: re.Pattern[str], text: str) -> bool:
    return pattern.search(text) is not None


def _finder(need: str) -> Callable[[str, int], int]:
    """Where a need next occurs in a text from a position (-1: nowhere)."""
    if _REGEX_SYNTAX.isdisjoint(need):
        return lambda text, start: text.find(need, start)
    return functools.partial(_next_match, re.compile(need))


def _next_match(pattern: re.Pattern[str], text: str, start: int) -> int:
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
