"""A cheaper working set (issue 27): each record line counted once, focus words found once per record, no passage
cut for a candidate that cannot fit, token counts added up instead of counted again — and the same bytes out.

The shortcuts are checked against what they replace: `hits` against the regex's own `finditer`, `count_joined` and
`count_blocks` against counting the joined text, a working set built with a shortcut against one built without it.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timezone

import hashlib
import re
from collections import Counter
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkeep import tokens
from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.evidence import EvidenceItem, EvidenceSearchRequest
from ctxkeep.models.working_set import WorkingSetRequest, WorkingSetResult
from ctxkeep.storage.sqlite.evidence import Evidence
from ctxkeep.tokens import count_blocks, count_joined, count_tokens
from ctxkeep.tools.checkpoint.versions import checkpoint_save
from ctxkeep.tools.evidence import evidence_search
from ctxkeep.tools.evidence.records import evidence_put
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.shared.search_terms import surface_pattern
from ctxkeep.tools.working_set import evidence_slot, passage
from ctxkeep.tools.working_set.assemble import build_working_set
from tests.conftest import procurement_state

pytestmark = pytest.mark.anyio

# pieces that stress the literal scan: word boundaries next to digits, underscores, apostrophes, hyphens, non-ASCII
# letters, and the four characters that match an ASCII letter ignoring case (İ ı ſ K)
PIECES = [
    "go", " good", "ago", "_x", "s", "'s", "-", "9", "e-mail", "o'neil", " ", "\n", ". ", "é", "Éa", "日本", "Über",
    "naïve", "GO", "ǅ", "ß", "µ", "\u0130", "\u0131", "\u017f", "\u212a", "²", "٣", "Caroline", "support", "group",
]  # fmt: skip
QUERIES = ["When did Caroline go to the support group?", "Melanie's e-mail to o'neil", "naive Über GO 9 s", "日本 go"]


def _regex_hits(text: str, pattern: re.Pattern[str]) -> list[tuple[int, str]]:
    """The scan the literal search replaces: the surface pattern's own finditer (lower-cased for ASCII text)."""
    scanned = text[:200_000]
    if scanned.isascii():
        pattern, scanned = re.compile(pattern.pattern.lower()), scanned.lower()
    return [(m.start(), m.group().casefold()) for _, m in zip(range(2_000), pattern.finditer(scanned), strict=False)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=80), st.sampled_from(QUERIES))
def test_the_focus_words_found_are_those_the_regex_finds(pieces: list[str], query: str) -> None:
    text = "".join(pieces)
    pattern = surface_pattern(query)
    assert pattern is not None
    assert passage.hits(text, pattern.pattern) == _regex_hits(text, pattern)


LINE_STARTS = st.sampled_from(["> ", "## ", "### ", "- ", "_", "[", "1. ", "**"])
LINE_TEXT = st.lists(st.sampled_from([*"abc XYZ.,:;!?-_'\t1234é日本…", "  ", "'s", " \t"]), max_size=30).map("".join)


@st.composite
def _blocks(draw: Any) -> str:
    """A block of lines as the working set renders them: each starts with something visible, ends with a line break."""
    lines = draw(st.lists(st.tuples(LINE_STARTS, LINE_TEXT), min_size=1, max_size=5))
    return "".join(start + text + "\n" for start, text in lines)


@settings(max_examples=300, deadline=None)
@given(st.lists(_blocks(), min_size=1, max_size=6))
def test_counts_added_up_are_the_count_of_the_joined_text(blocks: list[str]) -> None:
    counts = [count_tokens(block) for block in blocks]
    assert count_joined(blocks, counts) == count_tokens("".join(blocks))
    assert count_blocks(blocks, counts) == count_tokens("\n".join(blocks))


def test_counts_that_cannot_be_added_up_are_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    parts = ["> a\n", "\n> b\n"]  # the second starts with a line break: "\n\n" is one pre-token
    assert count_joined(parts, [99, 99]) == count_tokens("".join(parts))
    monkeypatch.setattr(tokens, "_encoder", None)  # the estimate adds nothing up (bytes / 4, rounded up)
    monkeypatch.setattr(tokens, "_name", tokens.ESTIMATE)
    assert count_joined(["> a\n", "> b\n"], [99, 99]) == count_tokens("> a\n> b\n")


FIXED = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)


async def _many_records(scope: Scope, count: int = 120) -> None:
    """Long multi-line records from several sources (so group headers and passages are both in play)."""
    items = []
    for i in range(count):
        lines = [
            f"Step {i}: the supplier {['Acme', 'Borealis', 'Cobalt', 'Dunmore'][i % 4]} sent quote {i} for freight.",
            f"Freight cost {100 + i} EUR per pallet; lead time {2 + i % 5} weeks; incoterm {['FOB', 'CIF'][i % 2]}.",
            "The procurement rule: compare every quote on the landed cost, not the unit price.",
            f"Note {i}: supplier C freight is still missing from the comparison of quote {i}.",
        ] * 3
        items.append(
            EvidenceItem(
                content="\n".join(lines),
                source=f"mail-{i % 6}",
                title=f"Quote {i} with a title long enough to count for several tokens of its own",
            )
        )
    await evidence_put(scope, items)
    await checkpoint_save(scope, CheckpointSaveRequest(task_id="quotes", state=TaskState(**procurement_state())))


class _CountingEncoder:
    """The tokenizer, counting the tokens it encodes."""

    def __init__(self, encoder: Any) -> None:
        self.encoder, self.tokens = encoder, 0

    def encode_ordinary(self, text: str) -> list[int]:
        ids: list[int] = self.encoder.encode_ordinary(text)
        self.tokens += len(ids)
        return ids


async def _built(scope: Scope, **request: Any) -> WorkingSetResult:
    return await build_working_set(
        scope, WorkingSetRequest(**{"task_id": "quotes", "focus": "supplier C freight quote", **request}), record=False
    )


async def test_a_working_set_counts_little_more_than_it_shows(scope: Scope, monkeypatch: pytest.MonkeyPatch) -> None:
    await _many_records(scope)
    await _built(scope)  # the tokenizer loaded, the contents read once
    encoder, _ = tokens._load()
    if encoder is None:
        pytest.skip("the tokenizer did not load: counts are estimates here")
    counting = _CountingEncoder(encoder)
    monkeypatch.setattr(tokens, "_encoder", counting)
    evidence_slot._quoted_line_tokens.cache_clear()
    result = await _built(scope, budget_tokens=8_000)
    assert result.tokens_total > 6_000
    # each candidate's line once (candidates that did not fit included), never the whole slot or text again
    assert counting.tokens <= 1.6 * result.tokens_total, (counting.tokens, result.tokens_total)


async def test_each_record_is_scanned_for_the_focus_once(scope: Scope, monkeypatch: pytest.MonkeyPatch) -> None:
    await _many_records(scope, 40)
    scanned: Counter[str] = Counter()
    real = evidence_slot.hits

    def counted(text: str, pattern: re.Pattern[str] | None) -> list[tuple[int, str]]:
        scanned[text] += 1
        return real(text, pattern)

    monkeypatch.setattr(evidence_slot, "hits", counted)
    result = await _built(scope, budget_tokens=20_000)  # room left over widens the best picks: each is cut twice
    assert result.evidence_refs and scanned and max(scanned.values()) == 1


async def test_a_candidate_that_cannot_fit_is_not_cut_and_the_result_is_the_same(
    scope: Scope, monkeypatch: pytest.MonkeyPatch
) -> None:
    scope = replace(
        scope, clock=lambda: FIXED
    )  # records of one moment: which ones fill the slot never depends on timing
    await _many_records(scope)
    cuts: Counter[str] = Counter()
    real = evidence_slot.best_passage

    def counted(text: str, *args: Any) -> Any:
        cuts["cut"] += 1
        return real(text, *args)

    monkeypatch.setattr(evidence_slot, "best_passage", counted)
    request = {"budget_tokens": 3_000, "slot_budgets": {"evidence": 700}}
    skipping = await _built(scope, **request)
    with_skip = cuts["cut"]
    monkeypatch.setattr(evidence_slot._Filler, "cannot_fit", lambda self, row: False)
    cuts.clear()
    cutting_all = await _built(scope, **request)
    assert skipping.model_dump() == cutting_all.model_dump()
    assert with_skip < cuts["cut"]


async def test_a_search_reads_its_hits_contents_in_one_query(scope: Scope, monkeypatch: pytest.MonkeyPatch) -> None:
    if type(scope.store).__name__ != "SqliteStore":
        pytest.skip("counts the SQLite store's blob reads")
    await _many_records(scope, 30)
    reads: Counter[str] = Counter()
    for name in ("blob", "blobs"):
        real = getattr(Evidence, name)

        async def counted(self: Evidence, *args: Any, _real: Any = real, _name: str = name) -> Any:
            reads[_name] += 1
            return await _real(self, *args)

        monkeypatch.setattr(Evidence, name, counted)
    found = await evidence_search(scope, EvidenceSearchRequest(query="supplier freight quote", limit=10))
    assert len(found.hits) == 10 and reads == Counter({"blobs": 1})
    small = await evidence_search(
        scope, EvidenceSearchRequest(query="supplier freight quote", limit=10, max_tokens=300)
    )
    assert small.truncated and small.hits and small.hits == found.hits[: len(small.hits)]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(min_value=1_500, max_value=20_000), st.sampled_from([*QUERIES, "supplier C freight"]))
async def test_the_same_request_gives_the_same_bytes_and_exact_counts(scope: Scope, budget: int, focus: str) -> None:
    async with scope.store.snapshot() as tx:
        stored = await tx.evidence.document_frequencies(scope.project, ["suppli"])
    if not stored:
        await _many_records(scope, 60)
    first = await _built(scope, budget_tokens=budget, focus=focus)
    again = await _built(scope, budget_tokens=budget, focus=focus)
    assert first.model_dump_json() == again.model_dump_json()
    assert first.tokens_total == count_tokens(first.text or "") and first.tokens_total <= budget
    assert [b.tokens for b in first.blocks] == [count_tokens(text) for text in _block_texts(first)]


def _block_texts(result: WorkingSetResult) -> list[str]:
    """The blocks as shown (each after the first opened by its line break), cut from the text by their hashes."""
    text, start, out = result.text or "", 0, []
    ends = [i for i in range(1, len(text)) if text[i] == "\n" and text[i - 1] == "\n"] + [len(text)]
    for block in result.blocks:
        end = next(
            e for e in ends if e > start and hashlib.sha256(text[start:e].encode()).hexdigest()[:16] == block.hash
        )
        out.append(text[start:end])
        start = end
    assert start == len(text)
    return out
