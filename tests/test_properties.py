"""Property-based tests: hostile JSON never crashes validation; valid states round-trip and verify deterministically."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ctxkeep.models import TaskState
from ctxkeep.tools.checkpoint.diff import diff_states
from ctxkeep.tools.checkpoint.verify import verify_states

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)
fields = st.sampled_from(list(TaskState.model_fields) + ["bogus"])
hostile_states = st.dictionaries(fields, json_values, max_size=6)

item = st.text(alphabet=st.characters(blacklist_categories=("Cc", "Cs")), min_size=1, max_size=40).filter(str.strip)
valid_states = st.builds(
    lambda goal, constraints, pending, completed, facts: {
        "goal": goal,
        "constraints": constraints,
        "pending": pending,
        "completed": completed,
        "facts": [{"key": f"k{i}", "value": v} for i, v in enumerate(facts)],
    },
    item,
    st.lists(item, max_size=5),
    st.lists(item, max_size=5),
    st.lists(item, max_size=5),
    st.lists(st.integers() | item, max_size=4),
)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(hostile_states)
def test_any_json_either_validates_or_raises_a_validation_error(data: dict[str, Any]) -> None:
    try:
        state = TaskState.model_validate(data)
    except ValidationError as error:
        assert error.errors()  # a field-level explanation, never a crash
    else:
        assert state.goal.strip() == state.goal and state.goal


@settings(max_examples=200)
@given(valid_states)
def test_a_state_round_trips_through_its_canonical_json(data: dict[str, Any]) -> None:
    state = TaskState.model_validate(data)
    again = TaskState.model_validate_json(state.canonical())
    assert again == state and again.canonical() == state.canonical()


@settings(max_examples=200)
@given(valid_states, st.lists(item, max_size=4), st.lists(item, max_size=4))
def test_a_state_that_only_gains_items_verifies_clean(
    data: dict[str, Any], new_pending: list[str], new_rules: list[str]
) -> None:
    before = TaskState.model_validate(data)
    after = TaskState.model_validate(
        {**data, "pending": data["pending"] + new_pending, "constraints": data["constraints"] + new_rules}
    )
    assert verify_states(before, after) == []


@settings(max_examples=200)
@given(valid_states, valid_states)
def test_when_nothing_differs_nothing_is_violated(a: dict[str, Any], b: dict[str, Any]) -> None:
    before, after = TaskState.model_validate(a), TaskState.model_validate(b)
    if not diff_states(before, after):
        assert verify_states(before, after) == []
    assert diff_states(before, before) == [] and verify_states(before, before) == []
