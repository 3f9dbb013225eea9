"""The evidence slot's priors: a month or a speaker the focus names raises the records it names (issue 17)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.storage import SearchFilter, Store
from ctxkeep.tools.evidence import evidence_put
from ctxkeep.tools.scope import Scope
from ctxkeep.tools.working_set.retrieval import named_months, rank_evidence
from tests.conftest import PROJECT

pytestmark = pytest.mark.anyio
ANY = SearchFilter(task_id=None, kind=None, tags=[], valid_at=None, exclude_expired_at=None)


def _others() -> list[EvidenceItem]:
    return [
        _turn(f"Caroline: the weather on day {n} was {word}", 7, f"other {n}")
        for n, word in enumerate(["sunny", "rainy", "windy", "cold", "warm", "grey"])
    ]


def _turn(text: str, month: int, title: str) -> EvidenceItem:
    return EvidenceItem(
        content=text,
        kind="message",
        source="chat-1",
        title=title,
        effective_at=datetime(2023, month, 12, tzinfo=timezone.utc),
    )


async def _ranked(store: Store, items: list[EvidenceItem], focus: str) -> list[str]:
    if items:
        await evidence_put(Scope(store=store, project=PROJECT), items)
    async with store.snapshot() as tx:
        return [c.row.title or "" for c in (await rank_evidence(tx, PROJECT, focus, ANY, 20)).candidates]


def test_months_named_in_a_question_are_found_with_their_year() -> None:
    assert named_months("When did Melanie go camping in June?") == {(6, None)}
    assert named_months("What did she paint on October 13, 2023, and in May 2022?") == {(10, "2023"), (5, "2022")}
    assert named_months("May I ask what happened?") == {(5, None)}  # a false friend costs only a mild boost
    assert named_months("nothing dated here") == set()


async def test_a_record_dated_in_the_month_the_focus_names_ranks_first(store: Store) -> None:
    items = [
        *_others(),
        _turn("Melanie: we went camping at the lake", 6, "first"),
        _turn("Melanie: we went camping at the lake, camping", 8, "second"),
    ]
    assert (await _ranked(store, items, "When did Melanie go camping at the lake in June?"))[0] == "first"


async def test_a_turn_by_the_speaker_the_focus_names_ranks_first(store: Store) -> None:
    items = [
        *_others(),
        _turn("Caroline: the support group was great", 3, "caroline"),
        _turn("Melanie: Caroline, the support group, your support group, was a great group", 3, "melanie"),
    ]
    assert (await _ranked(store, items, "What did Caroline say about the support group?"))[0] == "caroline"
