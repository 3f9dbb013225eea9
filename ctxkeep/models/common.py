"""Field types and limits shared by every model.

Limits (also in docs/tools.md): a string field holds at most 4,000 characters (a task id 200, with no
invisible formatting characters or line breaks),
a list at most 2,000 items, and a whole state at most 1,000,000 bytes of JSON. Strings are
trimmed; list items are deduplicated in order under the matching rules of `ctxkeep.text`;
control characters (other than tab and newline) and lone surrogates are refused.
"""

from __future__ import annotations

import unicodedata
from datetime import datetime, timezone
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from ctxkeep.text import find_bad_character, match_key

MAX_TEXT_CHARS = 4_000
MAX_TASK_ID_CHARS = 200
MAX_ITEMS = 2_000  # a long batch job's list fits; past it, archive to evidence and keep a count
MAX_STATE_BYTES = 1_000_000
STATE_SCHEMA_VERSION = 1
MAX_NUMBER = 2**53  # the largest integer every JSON client reads exactly
MAX_EVIDENCE_BYTES = 16 * 1024 * 1024  # one evidence item (the settings' default; CTXKEEP_MAX_EVIDENCE_BYTES)
# how long a memory of each kind lives (the settings' defaults; CTXKEEP_TTL_<KIND>_DAYS)
DEFAULT_TTL_DAYS: dict[str, int | None] = {"user_preference": 180, "task_fact": 7, "project_policy": None, "skill": 90}


def clean_text(value: str) -> str:
    problem = find_bad_character(value)
    if problem:
        raise ValueError(f"{problem}; send plain text (tab and newline are allowed)")
    return value.strip()


def _plain_id(value: str) -> str:
    """A task id must read the same everywhere: no invisible formatting characters (bidirectional overrides and
    isolates, zero-width characters, soft hyphens) and no line breaks or tabs, which could make two ids look alike."""
    for position, char in enumerate(value):
        if char in "\t\n\r" or unicodedata.category(char) in ("Cf", "Zl", "Zp"):
            kind = "invisible formatting character" if unicodedata.category(char) == "Cf" else "line break or tab"
            name = unicodedata.name(char, "")
            raise ValueError(
                f"{kind} U+{ord(char):04X}{f' ({name})' if name else ''} at position {position}; a task id must "
                "read the same everywhere: send letters, digits, spaces and punctuation only"
            )
    return value


def _required_text(value: str) -> str:
    if not value:
        raise ValueError("must not be empty or only whitespace")
    return value


def _utc(value: datetime) -> datetime:
    """A naive time means UTC; every time is kept in UTC (refused when it has no UTC form, e.g. year 0)."""
    try:
        return value.replace(tzinfo=timezone.utc) if value.tzinfo is None else value.astimezone(timezone.utc)
    except OverflowError:
        raise ValueError(
            "the time is out of range once converted to UTC; send a time between years 1 and 9999"
        ) from None


def _dedupe_strings(items: list[str]) -> list[str]:
    seen: set[str] = set()
    kept = []
    for item in items:
        if not item:
            raise ValueError("list items must not be empty; leave the item out instead")
        if match_key(item) not in seen:
            seen.add(match_key(item))
            kept.append(item)
    return kept


Text = Annotated[str, Field(max_length=MAX_TEXT_CHARS), AfterValidator(clean_text)]
RequiredText = Annotated[Text, AfterValidator(_required_text)]
TaskId = Annotated[
    str,
    Field(min_length=1, max_length=MAX_TASK_ID_CHARS, description="Your name for the task, e.g. 'fix-login-bug'."),
    AfterValidator(clean_text),
    AfterValidator(_required_text),
    AfterValidator(_plain_id),
]


def _at_most_items(items: list[str]) -> list[str]:
    if len(items) > MAX_ITEMS:
        raise ValueError(
            f"the list holds {len(items):,} items, at most {MAX_ITEMS} items are kept in a state; archive the "
            "finished ones to evidence (evidence_put) and keep a count in facts, or split the task"
        )
    return items


ItemList = Annotated[list[Text], AfterValidator(_at_most_items), AfterValidator(_dedupe_strings)]
Timestamp = Annotated[datetime, AfterValidator(_utc)]
Trigger = Literal["manual", "resource", "semantic", "pre_compact"]
# how a stored version came to be: a save's trigger, or a lease takeover at checkpoint_load (the same state, a new owner)
StoredTrigger = Literal["manual", "resource", "semantic", "pre_compact", "takeover"]
MAX_LEASE_SECONDS = 7 * 24 * 3600
OwnerId = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_TASK_ID_CHARS,
        description="Claim the task's lease as this owner (your agent or machine name).",
    ),
    AfterValidator(clean_text),
    AfterValidator(_required_text),
    AfterValidator(_plain_id),
]
LeaseSeconds = Annotated[
    int, Field(ge=0, le=MAX_LEASE_SECONDS, description="The lease's length (default 600 s; 0 releases it).")
]


class Model(BaseModel):
    """Every ctxkeep model: its validator is built on first use, not at import (a hook has ~250 ms for everything)."""

    model_config = ConfigDict(defer_build=True)


class StrictModel(Model):
    """Unknown fields are refused, so a typo never passes silently."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, defer_build=True)
