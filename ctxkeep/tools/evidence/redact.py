"""Secret redaction before storage: what must never sit in a database in clear text.

Each rule replaces only the secret itself with `[REDACTED:<kind>]`, keeping the words around it (a header
name, a URL's user, an env variable's name) so the text stays readable. Secrets are provider formats
(recognised anywhere) and literal values assigned to secret-named keys; expressions, calls, annotations,
placeholders and documentation examples are never touched, so code read back through evidence is the code
(`ctxkeep.tools.evidence.redaction` holds the rules).
"""

from __future__ import annotations

from bisect import bisect_left

from ctxkeep.tools.evidence.redaction import RULES, Context, Span


def _claim(taken: list[Span], span: Span) -> bool:
    """Add `span` to the sorted, disjoint `taken` unless it overlaps one already there."""
    index = bisect_left(taken, span)
    if index > 0 and taken[index - 1][1] > span[0]:
        return False
    if index < len(taken) and taken[index][0] < span[1]:
        return False
    taken.insert(index, span)
    return True


def redact_secrets(text: str) -> tuple[str, int]:
    """The text with every recognised secret replaced by a marker, and how many were replaced."""
    if len(text) < 8:
        return text, 0
    context = Context(text)
    taken: list[Span] = []
    kinds: dict[Span, str] = {}
    for rule in RULES:
        if not rule.applies(context):
            continue
        for start, end, kind in rule.find(context):
            span = context.trimmed(start, end)
            if span[0] < span[1] and _claim(taken, span):
                kinds[span] = kind
    if not taken:
        return text, 0
    parts, last = [], 0
    for start, end in taken:
        parts += [text[last:start], f"[REDACTED:{kinds[(start, end)]}]"]
        last = end
    parts.append(text[last:])
    return "".join(parts), len(taken)
