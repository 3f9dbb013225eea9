"""Each checkpoint verification rule: a failing case and a passing case."""

from __future__ import annotations

import time
from typing import Any

import pytest

from ctxkeep.models import TaskState
from ctxkeep.tools.checkpoint.verify import verify_states
from tests.conftest import procurement_state


def rules(before: dict[str, Any], after: dict[str, Any], reason: str | None = None) -> list[str]:
    return [v.rule for v in verify_states(TaskState(**before), TaskState(**after), reason)]


BASE = procurement_state()


def test_an_unchanged_state_has_no_violations() -> None:
    assert rules(BASE, BASE) == []


def test_goal_change_needs_a_reason() -> None:
    after = {**BASE, "goal": "Pick the cheapest supplier"}
    assert rules(BASE, after) == ["goal_changed"]
    assert rules(BASE, after, reason="The director narrowed the scope") == []


def test_goal_matching_ignores_case_and_spacing() -> None:
    assert rules(BASE, {**BASE, "goal": "  compare 20   SUPPLIER quotes "}) == []


def test_constraint_dropped_unless_declared_in_dropped() -> None:
    after = {**BASE, "constraints": []}
    assert rules({**BASE, "constraints": ["Budget is fixed at 200k"]}, after) == ["constraint_dropped"]
    declared = {
        **after,
        "dropped": [{"kind": "constraint", "item": "budget is fixed at 200K", "reason": "budget lifted"}],
    }
    assert rules({**BASE, "constraints": ["Budget is fixed at 200k"]}, declared) == []


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("Do not recommend a supplier before the data is complete", "Recommend a supplier before the data is complete"),
        ("不能推荐供应商", "可以推荐供应商"),
        ("Never execute the payment without approval", "Execute the payment without approval"),
    ],
)
def test_negated_clause_flipped_is_negation_lost(before: str, after: str) -> None:
    assert rules({**BASE, "constraints": [before]}, {**BASE, "constraints": [after]}) == ["negation_lost"]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "Do not recommend a supplier before the data is complete",
            "Must not recommend a supplier before the data is complete",
        ),
        ("不能推荐供应商", "禁止推荐供应商"),
    ],
)
def test_negation_kept_when_the_clause_survives_under_another_negation(before: str, after: str) -> None:
    assert rules({**BASE, "constraints": [before]}, {**BASE, "constraints": [after]}) == []


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "Orders above 184,300 USD must not be placed without approval",
            "Orders above 984,300 USD must not be placed without approval",
        ),
        ("Supplier B must not be contacted", "Supplier A must not be contacted"),
        ("供应商B不能联系", "供应商A不能联系"),
        ("Use only USD prices and do not contact supplier B", "Do not contact supplier B"),
    ],
)
def test_a_reworded_negation_must_keep_the_rest_of_the_item(before: str, after: str) -> None:
    assert rules({**BASE, "constraints": [before]}, {**BASE, "constraints": [after]}) == ["constraint_dropped"]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("Do not recommend a supplier", "Don\u2019t recommend a supplier"),
        ("特别注意：不要付款", "特别注意：不得付款"),
    ],
)
def test_typographic_and_chinese_negation_variants_are_the_same_item(before: str, after: str) -> None:
    assert rules({**BASE, "constraints": [before]}, {**BASE, "constraints": [after]}) == []


def test_bare_chinese_bu_is_a_negation_but_not_inside_other_words() -> None:
    assert rules({**BASE, "constraints": ["不推荐供应商"]}, {**BASE, "constraints": ["推荐供应商"]}) == [
        "negation_lost"
    ]
    assert rules({**BASE, "constraints": ["比较不同供应商"]}, {**BASE, "constraints": ["比较供应商"]}) == [
        "constraint_dropped"
    ]


def test_list_items_match_ignoring_thousands_separators() -> None:
    before = {**BASE, "pending": ["Pay 184,300 USD"]}
    assert rules(before, {**BASE, "pending": [], "completed": ["Pay 184300 USD"]}) == []


def test_a_pathological_state_verifies_quickly() -> None:
    before = {**BASE, "constraints": [f"no x.{i}" for i in range(50)]}
    after = {**BASE, "constraints": [], "plan": ["no x " * 799] * 1}
    started = time.process_time()  # this process's CPU time: a loaded machine does not inflate it
    assert "constraint_dropped" in rules(before, after)
    assert time.process_time() - started < 2


def test_a_negation_word_elsewhere_does_not_keep_the_clause() -> None:
    before = {**BASE, "constraints": ["Do not recommend a supplier yet"]}
    after = {**BASE, "constraints": ["Recommend a supplier yet", "Do not contact suppliers"]}
    assert rules(before, after) == ["negation_lost"]


def test_pending_item_must_be_accounted_for() -> None:
    vanished = {**BASE, "pending": []}
    assert rules(BASE, vanished) == ["pending_unaccounted"]
    assert rules(BASE, {**vanished, "completed": ["supplier c freight MISSING"]}) == []
    dropped = {
        **vanished,
        "dropped": [{"kind": "pending", "item": "Supplier C freight missing", "reason": "C withdrew"}],
    }
    assert rules(BASE, dropped) == []


def test_dropped_needs_the_right_kind() -> None:
    wrong_kind = {
        **BASE,
        "pending": [],
        "dropped": [{"kind": "decision", "item": "Supplier C freight missing", "reason": "x"}],
    }
    assert rules(BASE, wrong_kind) == ["pending_unaccounted"]


def test_decision_dropped_unless_declared() -> None:
    after = {**BASE, "decisions": []}
    assert rules(BASE, after) == ["decision_dropped"]
    declared = {
        **after,
        "dropped": [{"kind": "decision", "item": "Normalize all prices to USD/piece", "reason": "EUR now"}],
    }
    assert rules(BASE, declared) == []


def _fact(value: Any, source: str | None = "mail-1", unit: str = "USD/piece") -> dict[str, Any]:
    return {**BASE, "facts": [{"key": "Supplier C freight", "value": value, "unit": unit, "source_ref": source}]}


def test_fact_value_change_needs_a_new_source() -> None:
    assert rules(BASE, _fact(0.84)) == ["fact_changed"]
    assert rules(BASE, _fact(0.84, source=None)) == ["fact_changed"]
    assert rules(BASE, _fact(0.84, source="mail-2")) == []


def test_fact_unit_change_counts_as_a_change() -> None:
    assert rules(BASE, _fact(0.48, unit="EUR/piece")) == ["fact_changed"]


def test_numbers_match_ignoring_thousands_separators() -> None:
    before = _fact(184300)
    assert rules(before, _fact("184,300")) == []
    assert rules(before, _fact("184,301")) == ["fact_changed"]


def test_fact_dropped_unless_declared() -> None:
    after = {**BASE, "facts": []}
    assert rules(BASE, after) == ["fact_dropped"]
    declared = {
        **after,
        "dropped": [{"kind": "fact", "item": "supplier c freight", "reason": "superseded by landed cost"}],
    }
    assert rules(BASE, declared) == []


def _approval(**changes: Any) -> dict[str, Any]:
    return {**BASE, "approvals": [{**BASE["approvals"][0], **changes}]}


def test_approval_removed_unless_declared() -> None:
    assert rules(BASE, {**BASE, "approvals": []}) == ["approval_removed"]
    declared = {**BASE, "approvals": [], "dropped": [{"kind": "approval", "item": "PO-1", "reason": "order cancelled"}]}
    assert rules(BASE, declared) == []


DECIDED = "2026-11-30T10:00:00Z"


def test_approval_status_change_needs_an_approver_and_a_time() -> None:
    assert rules(BASE, _approval(status="approved")) == ["approval_transition_invalid"]
    assert rules(BASE, _approval(status="approved", approver="procurement director")) == ["approval_transition_invalid"]
    assert rules(BASE, _approval(status="approved", approver="procurement director", decided_at=DECIDED)) == []


def test_a_decided_approval_is_final() -> None:
    decided = _approval(status="approved", approver="director", decided_at=DECIDED)
    assert rules(decided, _approval(status="pending", approver="director", decided_at=DECIDED)) == [
        "approval_transition_invalid"
    ]
    assert rules(decided, _approval(status="approved", approver=None, decided_at=DECIDED)) == [
        "approval_transition_invalid"
    ]
    assert rules(decided, _approval(status="approved", approver="someone else", decided_at=DECIDED)) == [
        "approval_transition_invalid"
    ]
    assert rules(decided, _approval(status="rejected", approver="cfo", decided_at=DECIDED)) == [
        "approval_transition_invalid"
    ]
    assert rules(decided, decided) == []


def test_an_approvals_amount_is_fixed() -> None:
    assert rules(BASE, _approval(amount=1843000)) == ["approval_transition_invalid"]
    assert rules(BASE, _approval(amount=184300.0)) == []  # the same number
    assert rules(BASE, _approval(reason="director is travelling")) == []


def test_a_new_approval_decided_without_approver_is_invalid() -> None:
    extra = {"id": "PO-2", "action": "pay deposit", "status": "approved"}
    assert rules(BASE, {**BASE, "approvals": [*BASE["approvals"], extra]}) == ["approval_transition_invalid"]
    signed = {**extra, "approver": "cfo", "decided_at": DECIDED}
    assert rules(BASE, {**BASE, "approvals": [*BASE["approvals"], signed]}) == []


def test_violations_come_in_a_stable_order() -> None:
    after = {**BASE, "goal": "other", "pending": [], "facts": [], "approvals": [], "constraints": [], "decisions": []}
    assert rules(BASE, after) == [
        "goal_changed",
        "constraint_dropped",
        "pending_unaccounted",
        "decision_dropped",
        "fact_dropped",
        "approval_removed",
    ]


SUMMARY_STATE = TaskState(
    goal="Compare 20 supplier quotes",
    constraints=["Payment must not execute before approval", "数据不完整之前不能推荐"],
    pending=["Supplier C freight missing"],
    facts=[
        {"key": "Supplier C freight", "value": 0.48, "unit": "USD/piece"},
        {"key": "PO amount", "value": 184300},
        {"key": "note", "value": "prices vary", "critical": False},
    ],
    approvals=[{"id": "PO-7731", "action": "issue purchase order", "amount": 184300}],
)
FAITHFUL = (
    "Goal: Compare 20 supplier quotes. Payment must not execute before approval. 数据不完整之前不能推荐。 "
    "Pending: Supplier C freight missing. Freight 0.48 USD/piece; PO amount 184,300, approval PO-7731 still waiting."
)


def summary_rules(summary: str) -> list[tuple[str, str]]:
    from ctxkeep.tools.checkpoint.verify import verify_summary

    return [(v.rule, v.item) for v in verify_summary(SUMMARY_STATE, summary)]


def test_a_faithful_summary_passes() -> None:
    assert summary_rules(FAITHFUL) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("0.48", "0.84"), ("summary_fact_missing", "Supplier C freight")),
        (
            ("Pending: Supplier C freight missing", "Done: Supplier C freight missing"),
            ("summary_pending_missing", "Supplier C freight missing"),
        ),
        (
            ("must not execute before approval", "not executed yet"),
            ("summary_negation_lost", "Payment must not execute before approval"),
        ),
        (
            ("Payment must not execute before approval. ", ""),
            ("summary_negation_lost", "Payment must not execute before approval"),
        ),
        (("不能推荐", "可以推荐"), ("summary_negation_lost", "数据不完整之前不能推荐")),
        (("Goal: Compare 20 supplier quotes. ", ""), ("summary_goal_missing", "Compare 20 supplier quotes")),
        (("approval PO-7731 still waiting", "no approval needed"), ("summary_approval_missing", "PO-7731")),
        (("184,300", "184,3000"), ("summary_fact_missing", "PO amount")),
    ],
)
def test_the_seed_summary_failures_are_caught(change: tuple[str, str], expected: tuple[str, str]) -> None:
    old, new = change
    assert old in FAITHFUL
    assert summary_rules(FAITHFUL.replace(old, new)) == [expected]


def test_a_summary_that_leaves_out_a_completed_side_effect_is_caught() -> None:
    """Issue 14 item 5, in the summary checks too: a completed item left unsaid may be done again."""
    from ctxkeep.tools.checkpoint.verify import verify_summary

    state = TaskState(goal="Ship release 2.4", completed=["Deployed 2.4 to prod", "Sent the release mail to customers"])
    assert (
        verify_summary(state, "Goal: Ship release 2.4. Done: Deployed 2.4 to prod; Sent the release mail to customers.")
        == []
    )
    lost = verify_summary(state, "Goal: Ship release 2.4. Done: Deployed 2.4 to prod.")
    assert [(v.rule, v.item) for v in lost] == [("summary_completed_missing", "Sent the release mail to customers")]


@pytest.mark.parametrize(
    ("state", "summary"),
    [
        ({"facts": [{"key": "latency", "value": 250, "unit": "ms"}]}, "Latency is 250ms."),
        ({"facts": [{"key": "tolerance", "value": 0.00001}]}, "Tolerance 0.00001 kept."),
        ({"pending": ["Update settings.py"]}, "Still to do: Update settings.py"),
        ({"pending": ["wait for CI to complete"]}, "Next: wait for CI to complete"),
        ({"pending": ["Deploy"]}, "Deploy is not done yet"),
        (
            {"constraints": ["Do not push to main and do not delete branches."]},
            "Do not push to main and do not delete branches.",
        ),
        ({"constraints": ["Without sign-off we must not deploy."]}, "Without sign-off we must not deploy."),
    ],
)
def test_faithful_summaries_in_other_words_pass(state: dict[str, Any], summary: str) -> None:
    from ctxkeep.tools.checkpoint.verify import verify_summary

    assert verify_summary(TaskState(goal="g", **state), "g. " + summary) == []


@pytest.mark.parametrize(
    ("state", "summary", "rule"),
    [
        (
            {"pending": ["deploy to staging", "rollback"]},
            "deploy to staging was completed and the rollback is pending",
            "summary_pending_missing",
        ),
        ({"approvals": [{"id": "APR-7", "action": "ship"}]}, "Approval APR-7 was granted.", "summary_approval_missing"),
        ({"facts": [{"key": "id", "value": "123-456"}]}, "Ticket A-123-456 was opened.", "summary_fact_missing"),
    ],
)
def test_unfaithful_summaries_are_caught(state: dict[str, Any], summary: str, rule: str) -> None:
    from ctxkeep.tools.checkpoint.verify import verify_summary

    assert [v.rule for v in verify_summary(TaskState(goal="g", **state), "g. " + summary)] == [rule]


def test_a_completed_item_leaves_only_through_dropped_with_a_reason() -> None:
    from ctxkeep.models import TaskState
    from ctxkeep.tools.checkpoint.verify import verify_states

    before = TaskState(goal="Ship", completed=["Deployed to prod", "Sent the release mail"])
    emptied = TaskState(goal="Ship", completed=[])
    assert [(v.rule, v.item) for v in verify_states(before, emptied)] == [
        ("completed_dropped", "Deployed to prod"),
        ("completed_dropped", "Sent the release mail"),
    ]
    declared = TaskState(
        goal="Ship",
        completed=["Sent the release mail"],
        dropped=[{"kind": "completed", "item": "Deployed to prod", "reason": "archived to evidence ev_1"}],
    )
    assert verify_states(before, declared) == []
