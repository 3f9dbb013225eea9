"""The redaction rules' needs (what a text must hold for a rule to run) are looked for without compiling a regex at
import: a plain alternation (`gh[pousr]_`, `k_(?:live|test)_`) as its literal strings, any other pattern only where
its literal start occurs. Either way a need must be found exactly where its regex finds it."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkeep.tools.redaction import redact

PIECES = sorted({piece for need in redact._NEEDS for piece in re.split(r"[\\()\[\]?:|{}]", need) if piece})
texts = st.lists(
    st.one_of(st.sampled_from(PIECES), st.text(alphabet="abgpsx.-_:/ =ASGKI\n", max_size=4)), max_size=25
).map("".join)


def test_every_need_but_a_real_pattern_is_a_set_of_literals() -> None:
    patterns = [need for need in redact._NEEDS if not redact._REGEX_SYNTAX.isdisjoint(need)]
    assert patterns and [need for need in patterns if redact._literals(need) is None] == ["name\\W{0,3}:"]
    for need in patterns:
        for literal in redact._literals(need) or ():
            assert re.fullmatch(need, literal), (need, literal)


@settings(max_examples=500, deadline=None)
@given(text=texts, start=st.integers(min_value=0, max_value=30))
def test_a_need_is_found_where_its_regex_finds_it(text: str, start: int) -> None:
    for need, (search, _), find in zip(redact._NEEDS, redact._SEARCHES, redact._FINDERS, strict=True):
        found = re.search(need, text)
        assert search(text) == (found is not None), need
        later = re.compile(need).search(text, start)
        assert find(text, start) == (later.start() if later else -1), (need, start)
