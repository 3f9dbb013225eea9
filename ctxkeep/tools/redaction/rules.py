"""The parts every redaction rule shares: the text as rules see it, and a rule as a kind plus a span finder.

Rules read a *view* of the text of the same length, so a span found in the view is the same span in the text:
Claude Code's Read prefixes (`     2→`) and `cat -n` prefixes become spaces, so a line-anchored rule sees the line
itself, and JSON escapes (`\\n`, `\\t`, `\\"`) become a space plus the character, so a `.env` inside a JSON
string still has its lines.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import cached_property

from ctxkeep.text import LazyPattern

Span = tuple[int, int]
# A line number before a line, as Read (`     2→`) and `cat -n` (`     2\t`) print them; anchored on the newline
# before it (a pattern that starts with a literal is found fast), the first line checked on its own.
_LINE_NUMBER = LazyPattern(r"\n[ \t]*\d+[ \t]*(?:→|\t)")
_FIRST_LINE_NUMBER = LazyPattern(r"[ \t]*\d+[ \t]*(?:→|\t)")
# JSON escapes, also doubly escaped (`\\\\n`, JSON inside JSON), and an escaped Read arrow (`\\u2192`)
_DOUBLE_ESCAPE = LazyPattern(r'\\{2,}(?:[nrt"]|u2192)')
_UNESCAPED = {"n": "\n", "r": " ", "t": "\t", '"': '"'}
_ESCAPES = [("\\" + escape, " " + blank) for escape, blank in _UNESCAPED.items()] + [("\\u2192", "     →")]
# A line that only code has: a definition, an import, a declaration, a decorator. (Not a lone `}`: JSON and HCL
# configs end with one, and their literals are values.)
_CODE_LINE = (
    r"[ \t]*(?:(?:async[ \t]+)?def[ \t]+\w+[ \t]*\(|import[ \t]+[\w.{*]|from[ \t]+[\w.]+[ \t]+import\b"
    r"|(?:export[ \t]+)?(?:default[ \t]+)?(?:abstract[ \t]+)?class[ \t]+\w+[^\n]*[:{][ \t]*$"
    r"|(?:export[ \t]+)?(?:default[ \t]+)?(?:async[ \t]+)?function\b|(?:export[ \t]+)?(?:const|let|var)[ \t]+[\w${\[][^\n=]*="
    r"|(?:export[ \t]+)?(?:declare[ \t]+)?(?:interface|type|enum|namespace)[ \t]+\w+[^\n]*[={]"
    r"|func[ \t]+[\w(]|package[ \t]+[\w.]+;?[ \t]*$|module\.exports\b|#include\b"
    r"|return\b|fn[ \t]+\w|@[A-Za-z_][\w.]*[ \t]*(?:\(|$)|\}[ \t]*(?:else\b|catch\b)|(?:if|for|while)[ \t]*\()"
)
_CODE_FIRST, _CODE = LazyPattern(f"(?m){_CODE_LINE}"), LazyPattern(f"(?m)\n{_CODE_LINE}")


def _blank_escape(match: re.Match[str]) -> str:
    escape = match.group()
    if escape.endswith("u2192"):
        return " " * (len(escape) - 1) + "→"
    return " " * (len(escape) - 1) + _UNESCAPED[escape[-1]]


class Context:
    """One text being redacted: the text, its view, its lower-case form, and whether it reads as source code."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lowered = text.lower()

    @cached_property
    def view(self) -> str:
        view = self.text
        if "\\" not in view and "→" not in view and "\t" not in view:
            return view
        if "\\" in view:
            if "\\\\" in view:  # escapes of escapes (JSON inside JSON): rare, so a slower pass
                view = _DOUBLE_ESCAPE.sub(_blank_escape, view)
            for escape, blank in _ESCAPES:
                if escape in view:  # finding is cheaper than replacing nothing
                    view = view.replace(escape, blank)
        if "→" in view or "\t" in view:
            first = _FIRST_LINE_NUMBER.match(view)
            if first:
                view = " " * first.end() + view[first.end() :]
            view = _LINE_NUMBER.sub(lambda m: "\n" + " " * (len(m.group()) - 1), view)
        return view

    @cached_property
    def low(self) -> str | None:
        """The view in lower case, for case-insensitive rules; None when lowering changed its length (rare letters)."""
        low = self.lowered if self.view is self.text else self.view.lower()
        return low if len(low) == len(self.view) else None

    @cached_property
    def is_code(self) -> bool:
        """Source code: its unquoted right-hand sides are expressions (`token = next_token`), not values."""
        return _CODE_FIRST.match(self.view) is not None or _CODE.search(self.view) is not None

    def trimmed(self, start: int, end: int) -> Span:
        """The span without the view's blanks at its ends (a `\\` of an escape, a line prefix)."""
        text, view = self.text, self.view
        if text is view:
            return start, end
        while start < end and text[start] != view[start]:
            start += 1
        while end > start and text[end - 1] != view[end - 1]:
            end -= 1
        return start, end


Found = tuple[int, int, str]  # a span and its kind
Finder = Callable[[Context], Iterator[Found]]


class Rule:
    """A family of secrets: what it finds in a text, and patterns one of which the text must hold for it to run.

    Most texts hold none, and skipping is the fast path: a pattern that starts with a literal is found far faster
    than any rule runs. Lower-case patterns are searched in the lower-cased text.
    """

    def __init__(self, needs: tuple[str, ...], find: Finder) -> None:
        self.needs = needs
        self.find = find


Accept = Callable[[str, re.Match[str], Context], bool]


def matches(context: Context, pattern: LazyPattern, folded: LazyPattern | None) -> Iterator[re.Match[str]]:
    """`pattern` over the view; with `folded` (the same pattern, written in lower case) over the lower-cased view,
    which is much faster than a case-insensitive pattern. Groups are spans: read their text from `context.view`."""
    if folded is None:
        return pattern.finditer(context.view)
    return folded.finditer(context.low) if context.low is not None else pattern.finditer(context.view)


def pattern_rule(
    kind: str,
    needs: tuple[str, ...],
    pattern: str,
    group: int | str = 0,
    accept: Accept | None = None,
    fold: bool = False,
) -> Rule:
    """A rule that is one regex: the span of `group` in each match that `accept(secret, match, context)` keeps.
    fold: match case-insensitively (write the pattern in lower case)."""
    compiled = LazyPattern(f"(?i){pattern}" if fold else pattern)
    folded = LazyPattern(pattern) if fold else None

    def find(context: Context) -> Iterator[Found]:
        for match in matches(context, compiled, folded):
            start, end = match.span(group)
            secret = context.view[start:end]
            if secret and (accept is None or accept(secret, match, context)):
                yield start, end, kind

    return Rule(needs, find)
