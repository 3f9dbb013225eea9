"""The negation markers are found by a grouped pattern (a look at the first character, then the alternatives): it must
find exactly the markers the plain alternation of `\\bmarker\\b`s finds, at the same places, in any text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkeep.tools.shared import negation

PLAIN = re.compile(negation._ALTERNATIVES)
FAST = re.compile(negation._MARKER)
PIECES = [
    *negation._ENGLISH,
    *negation._CHINESE,
    "不",
    "不同",
    "不过",
    "nothing",
    "note",
    "knot",
    "avoided",
    "cannot'",
    "don't",
    "non",
    "nowhere",
    "without-",
    "must",
    "do",
    "a",
    "is",
    "never-ending",
    "推荐",
    "禁",
    "x1",
    "_not",
    "no_",
]
texts = st.lists(
    st.one_of(st.sampled_from(PIECES), st.sampled_from([" ", "  ", ".", ",", "\n", "-", "'", "_", "。", "，"])),
    max_size=40,
).map("".join)


@settings(max_examples=600, deadline=None)
@given(text=texts)
def test_the_grouped_pattern_finds_the_markers_the_plain_alternation_finds(text: str) -> None:
    assert [m.span() for m in FAST.finditer(text)] == [m.span() for m in PLAIN.finditer(text)]


def test_clauses_of_real_rules_are_unchanged() -> None:
    rules = [
        "do not replace highlight.js.",
        "Expanding/collapsing must not reset annotation selection state, and never drop the cursor",
        "不要在生产环境运行，不同的配置不能混用",
        "No duplicate debug-row HTML; avoid a second renderer path without tests",
    ]
    for rule in rules:
        assert [m.span() for m in FAST.finditer(rule.lower())] == [m.span() for m in PLAIN.finditer(rule.lower())]
    assert negation.negated_clauses("Do not replace highlight.js; never skip the tests") == (
        "replace highlight",
        "skip the tests",
    )
