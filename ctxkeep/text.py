"""Text rules shared by every layer: matching, one-line labels, canonical JSON, stored times.

Matching (DESIGN.md): NFC, trimmed and collapsed whitespace, casefolded. Numbers match
verbatim, ignoring thousands separators. Stored text may not carry control characters
(other than tab and newline) or lone surrogates: they break JSON, SQLite and terminals.
"""

from __future__ import annotations

import functools
import json
import re
import sys

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from datetime import datetime
    from typing import Any


@functools.lru_cache(maxsize=8192)
def match_key(text: str) -> str:
    """The form two items are compared in: NFC, single spaces, trimmed, casefolded, no thousands separators."""
    if not text.isascii():  # ASCII is its own NFC (and unicodedata costs a hook process its import)
        import unicodedata

        text = unicodedata.normalize("NFC", text)
    return _THOUSANDS.sub("", " ".join(text.split()).casefold())


def value_key(value: object) -> str:
    """A value's comparison form: 184300, 184300.0, "184,300" and "184300" are equal; "184300.00" is not."""
    if isinstance(value, float):
        value = int(value) if value.is_integer() else format(value, ".15f").rstrip("0").rstrip(".")  # 1e-05 -> 0.00001
    return match_key(value if isinstance(value, str) else json.dumps(value))


def find_bad_character(text: str) -> str | None:
    """Describe the first character that may not be stored, or None when all are fine."""
    found = (_BAD_ASCII if text.isascii() else _BAD_CHARACTER).search(text)
    if found is None:
        return None
    char = found.group()
    kind = "lone surrogate" if "\ud800" <= char <= "\udfff" else "control character"
    return f"{kind} U+{ord(char):04X} at position {found.start()}"


def one_line(text: str | None, limit: int | None = None) -> str:
    """`text` on one line (every whitespace run one space), cut after `limit` characters with "…" (for labels)."""
    flat = " ".join((text or "").split())
    return flat if limit is None or len(flat) <= limit else flat[:limit] + "…"


def without_bad_characters(text: str) -> str:
    """`text` with every character `find_bad_character` would refuse removed (for text read from files)."""
    return (_BAD_ASCII if text.isascii() else _BAD_CHARACTER).sub("", text)


def canonical_json(data: Any) -> str:
    """Deterministic JSON: sorted keys, no spaces, UTF-8 text kept as is."""
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def utc_text(moment: datetime | None) -> str | None:
    """A time as fixed-width UTC text, so stored times compare correctly as strings."""
    if moment is None:
        return None
    from datetime import timezone  # here: the hooks' fast path uses this module and never formats a datetime

    t = moment.astimezone(timezone.utc)  # strftime's %Y does not pad years before 1000 on every platform
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}.{t.microsecond:06d}Z"


def utc_moment(text: str) -> datetime:
    """A stored time (`utc_text`'s form, or any RFC 3339 time with an offset) as an aware datetime, on every Python
    (`datetime.fromisoformat` reads a trailing `Z` only from 3.11 on)."""
    from datetime import datetime

    return datetime.fromisoformat(text[:-1] + "+00:00" if text.endswith(("Z", "z")) else text)


def inline_quote(text: str | None, limit: int | None = None) -> str:
    """Outside text (a path from a traceback, a command line) as one inline code span: one line, its backticks
    replaced, so it cannot close the span or start a heading of its own."""
    return "`" + one_line((text or "").replace("`", "'"), limit) + "`"


class LazyPattern:
    """A regex compiled the first time it is used, so a per-event hook compiles only the patterns its event needs."""

    __slots__ = ("_compiled", "_flags", "_source")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source, self._flags = source, flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return self._compiled

    def search(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.search(text, pos, endpos)

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.match(text, pos, endpos)

    def fullmatch(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        return self.compiled.fullmatch(text, pos, endpos)

    def findall(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> list[Any]:
        return self.compiled.findall(text, pos, endpos)

    def finditer(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text, pos, endpos)

    def sub(self, replacement: str | Callable[[re.Match[str]], str], text: str, count: int = 0) -> str:
        return self.compiled.sub(replacement, text, count)

    def split(self, text: str, maxsplit: int = 0) -> list[str | Any]:
        return self.compiled.split(text, maxsplit)


# The only characters outside ASCII that a case-insensitive `re` pattern matches to an ASCII letter
# (tests/test_text.py enumerates every code point to keep this true).
_TO_ASCII_LETTER = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
_NOT_ASCII_WORD = LazyPattern(r"[^a-z0-9]+")


def ascii_words(text: str) -> str:
    """The ASCII words of `text` as a case-insensitive pattern sees them: lower case, every run of other characters
    one space, a space at both ends. A literal word sequence an IGNORECASE pattern matches, after a boundary, is
    in it as " word …", so a search for " word" tells whether a pattern can match before compiling it."""
    return f" {_NOT_ASCII_WORD.sub(' ', text.translate(_TO_ASCII_LETTER).lower()).strip()} "


class GatedPattern(LazyPattern):
    """A lazily compiled pattern that cannot match a text whose `ascii_words` holds none of `needs`: the caller
    checks that first (`can_match`) and compiles nothing for the many texts that cannot match."""

    __slots__ = ("needs",)

    def __init__(self, needs: tuple[str, ...], source: str, flags: int = 0) -> None:
        super().__init__(source, flags)
        self.needs = needs

    def can_match(self, words: str) -> bool:
        return any(need in words for need in self.needs)


_THOUSANDS = LazyPattern(r"(?<=\d)[,_'\u00a0\u202f\u2009](?=\d{3}(?:\D|$))")
# C0 and C1 control characters except tab, newline and carriage return; UTF-16 surrogates (and the ASCII ones alone,
# a pattern far quicker to compile, for ASCII text)
_BAD_CHARACTER = LazyPattern("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
_BAD_ASCII = LazyPattern("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
