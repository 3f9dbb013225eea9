"""A streaming scan of one JSON text: how deep it nests, and its top level with everything nested collapsed.

The transports need a request's `id` before, or instead of, parsing the whole request: when it is over the size
limit (its `id` may come after a 70 MB `params`, as the TypeScript SDK writes it), when it nests too deep to parse,
or when it is not valid JSON at all. `Scan` takes the bytes in any pieces and keeps only the top level: members of
the top-level object (of each object of a batch), with nested objects and arrays replaced by `{}` and `[]` and long
strings by a placeholder. Strings are skipped by regular expression, so quotes, brackets and escapes inside them
never count, and a nested `"id"` is never taken for the top-level one. Memory stays under SKELETON_BYTES.
"""

from __future__ import annotations

import json
import re
from typing import Any

SKELETON_BYTES = 64 * 1024  # room for the top level of any real request: beyond it, the top level is unreadable
STRING_BYTES = 1_024  # a top-level string longer than this is kept as CUT (no real id or method is this long)
MAX_INT_DIGITS = 4_300  # Python's int-from-text limit, and the longest integer the SDK's parser accepts
CUT = "\x00ctxkeep:cut"  # stands for a top-level string that was too long to keep
_CUT_JSON = json.dumps(CUT).encode()

_STRUCTURE = re.compile(rb'["{}\[\]]')
_SPACE = re.compile(r"\s*")
_STRING_BODY = re.compile(rb'[^"\\]*(?:\\.[^"\\]*)*', re.DOTALL)  # up to the closing quote, or a final lone backslash
# a top-level member "id" in a skeleton that does not parse (a request cut short): nested ones were collapsed
_TOP_ID = re.compile(rb'^\s*\{(?:.*[,{])?\s*"id"\s*:\s*(-?\d{1,4300}(?![\d.eE])|"(?:[^"\\]|\\.){0,1024}")', re.DOTALL)


class HugeInt:
    """Stands for an integer of more than MAX_INT_DIGITS digits in a skeleton (never a usable id)."""

    def __init__(self, digits: str) -> None:
        self.digits = len(digits.lstrip("-"))


def _parse_int(text: str) -> int | HugeInt:
    return HugeInt(text) if len(text.lstrip("-")) > MAX_INT_DIGITS else int(text)


class Scan:
    """Feed the bytes of one JSON text in pieces; then read `max_depth` and `values()` (the collapsed top level)."""

    def __init__(self) -> None:
        self.depth = 0
        self.max_depth = 0
        self.overflow = False  # the top level outgrew SKELETON_BYTES: values() is None
        self._keep_level = 1  # the deepest level kept: 1 for an object, 2 for the objects inside a batch
        self._in_string = False
        self._escaped = False  # the previous piece ended in a backslash inside a string
        self._kept = bytearray()
        self._string: bytearray | None = None  # the kept string being read (None: not kept, or too long)
        self._string_kept = False  # the string being read is at a kept level
        self._broken = False  # a closing bracket that closes nothing

    def feed(self, data: bytes) -> None:
        """Scan the next piece of the text."""
        i, n = 0, len(data)
        while i < n:
            if self._in_string:
                i = self._string_part(data, i)
                continue
            found = _STRUCTURE.search(data, i)
            stop = found.start() if found else n
            if stop > i and self.depth <= self._keep_level:
                self._keep(data[i:stop])
            if found is None:
                return
            self._structure(data[stop])
            i = stop + 1

    def _string_part(self, data: bytes, i: int) -> int:
        """Read string bytes from `i`; returns where scanning goes on (after the closing quote, or the piece's end)."""
        start = i
        if self._escaped:  # this byte is escaped by the backslash that ended the previous piece
            i, self._escaped = i + 1, False
        end = _STRING_BODY.match(data, i).end()  # type: ignore[union-attr]  # the pattern matches the empty string
        closed = end < len(data) and data[end] == ord('"')
        if end < len(data) and not closed:  # a lone backslash at the very end of the piece
            self._escaped, end = True, end + 1
        if self._string is not None:
            self._string += data[start:end]
            if len(self._string) > STRING_BYTES:
                self._string = None
        if not closed:
            return end
        self._in_string = False
        if self._string_kept:
            self._keep(bytes(self._string) + b'"' if self._string is not None else _CUT_JSON)
        return end + 1

    def _structure(self, char: int) -> None:
        if char == ord('"'):
            self._in_string, self._string_kept = True, self.depth <= self._keep_level
            self._string = bytearray(b'"') if self._string_kept else None
        elif char in b"{[":
            if self.depth == 0:
                self._keep_level = 2 if char == ord("[") else 1
            if self.depth < self._keep_level:
                self._keep(bytes([char]))
            elif self.depth == self._keep_level:
                self._keep(b"{}" if char == ord("{") else b"[]")
            self.depth += 1
            self.max_depth = max(self.max_depth, self.depth)
        elif self.depth == 0:
            self._broken = True
        else:
            self.depth -= 1
            if self.depth < self._keep_level:
                self._keep(bytes([char]))

    def _keep(self, data: bytes) -> None:
        if self.overflow:
            return
        if len(self._kept) + len(data) > SKELETON_BYTES:
            self.overflow = True
            self._kept.clear()
            return
        self._kept += data

    def values(self) -> list[Any] | None:
        """The top-level JSON values of the text, nested parts collapsed; None when they do not parse."""
        if self.overflow or self._broken or self._in_string or self.depth:
            return None
        try:
            text = self._kept.decode("utf-8")
        except UnicodeDecodeError:
            return None
        decoder = json.JSONDecoder(parse_int=_parse_int)
        values, i = [], 0
        try:
            while (i := _SPACE.match(text, i).end()) < len(text):  # type: ignore[union-attr]  # matches the empty string
                value, i = decoder.raw_decode(text, i)
                values.append(value)
        except ValueError:
            return None
        return values

    def fallback_id(self) -> Any:
        """The top-level id of a text that does not parse (a request cut short, broken JSON), or None."""
        if self.overflow or self._keep_level != 1:
            return None
        found = _TOP_ID.match(self._kept)
        if found is None:
            return None
        try:
            return json.loads(found.group(1), parse_int=_parse_int)
        except ValueError:
            return None
