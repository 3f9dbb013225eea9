"""The account of a delivered working set, kept in its stored selection (`selection_json` gains a `shown` key that
older readers ignore) and read back for people: which slots got how many tokens, which evidence and memories."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError

from ctxkeep.models.delivered import DeliveredWorkingSet
from ctxkeep.models.working_set import WorkingSetResult
from ctxkeep.storage import WorkingSetRow


def with_delivered(selection_json: str, result: WorkingSetResult) -> str:
    """The selection JSON with the result's account added under `shown` (no rendered text)."""
    shown = result.model_dump(
        mode="json",
        include={
            "version",
            "focus",
            "format",
            "budget_tokens",
            "tokens_total",
            "slot_budgets",
            "blocks",
            "evidence_refs",
            "memory_ids",
        },
    )
    return json.dumps({**json.loads(selection_json), "shown": shown})


def delivered(row: WorkingSetRow) -> DeliveredWorkingSet | None:
    """What the stored working set delivered, or None when it was built before ctxkeep kept the account."""
    try:
        shown: Any = json.loads(row.selection_json).get("shown")
        if not isinstance(shown, dict):
            return None
        return DeliveredWorkingSet.model_validate(
            {**shown, "task_id": row.task_id, "built_at": row.built_at, "state_lines": json.loads(row.claims_json)}
        )
    except (ValueError, ValidationError, AttributeError):
        return None
