"""Property-based tests: hostile JSON never crashes validation; valid states round-trip and verify deterministically."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ctxkeep.models import TaskState
from ctxkeep.tools.diff import diff_states
from ctxkeep.tools.verify import verify_states

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
        "goal": goal, "constraints": constraints, "pending": pending, "completed": completed,
        "facts": [{"key": f"k{i}", "value": v} for i, v in enumerate(facts)],
    },
    item, st.lists(item, max_size=5), st.lists(item, max_size=5), st.lists(item, max_size=5),
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
@given(valid_states, valid_states)
def test_verification_and_diff_are_deterministic_and_empty_against_itself(a: dict[str, Any], b: dict[str, Any]) -> None:
    before, after = TaskState.model_validate(a), TaskState.model_validate(b)
    assert verify_states(before, before) == [] and diff_states(before, before) == []
    assert verify_states(before, after) == verify_states(before, after)
    assert diff_states(before, after) == diff_states(before, after)
