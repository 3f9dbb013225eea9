"""The compaction check's passage index (`compaction_check.check.Passages`) finds what reading every passage finds.

A summary's passages are indexed by their terms once, and each item looks up its candidates; the first passage that
carries an item must be the one a scan of every passage in order finds, for any items and summaries.
"""

from __future__ import annotations

import math

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkeep.tools.compaction_check import carrying_passage, check_summary
from ctxkeep.tools.compaction_check.check import WORDS_CARRIED, Item, Passages, _terms, passages

# words, identifiers, and identifiers that hold one another (`a.py` is part of `src/a.py`), so the substring rule and
# the share of plain words are both exercised
VOCABULARY = [
    "run",
    "running",
    "tests",
    "test",
    "migration",
    "migrations",
    "deploy",
    "deployed",
    "never",
    "not",
    "commit",
    "vendored",
    "libraries",
    "touch",
    "the",
    "and",
    "src/a.py",
    "a.py",
    "src/b.py",
    "v2",
    "v2.1",
    "spotter-dov.3",
    "dov",
    "API",
    "fooBar",
    "42",
    "4,200",
    "#123",
    "pending",
    "done",
]
phrases = st.lists(st.sampled_from(VOCABULARY), min_size=0, max_size=9).map(" ".join)


def scan(text: str, summary_passages: list[str]) -> str | None:
    """Every passage read in order, as the check did before its index."""
    ids, words = _terms(text)
    if not ids and not words:
        return None
    need = max(min(len(words), 3), math.ceil(len(words) * WORDS_CARRIED))
    for passage in summary_passages:
        p_ids, p_words = _terms(passage)
        have_ids = {i for i in ids if i in p_ids or any(i in other for other in p_ids)}
        if have_ids == ids and len(words & p_words) >= need:
            return passage
    return None


@settings(max_examples=400, deadline=None)
@given(items=st.lists(phrases, min_size=1, max_size=12), summary=st.lists(phrases, min_size=0, max_size=40))
def test_the_index_finds_the_passage_a_scan_finds(items: list[str], summary: list[str]) -> None:
    index = Passages(summary)
    for item in items:
        assert index.carrying(item) == scan(item, summary), item
        assert carrying_passage(item, summary) == scan(item, summary), item


@settings(max_examples=150, deadline=None)
@given(items=st.lists(phrases, min_size=1, max_size=8), lines=st.lists(phrases, min_size=1, max_size=30))
def test_a_rule_is_left_out_exactly_when_no_passage_carries_it(items: list[str], lines: list[str]) -> None:
    summary = "\n".join(lines)
    rules = [text for text in dict.fromkeys(items) if text.strip()]
    found = check_summary([Item("rule", text) for text in rules], summary)
    left_out = {f.item.text for f in found if f.detail == "the summary leaves this rule out"}
    assert left_out == {text for text in rules if scan(text, passages(summary)) is None}
