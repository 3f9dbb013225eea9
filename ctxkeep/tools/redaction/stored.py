"""One redaction for everything a tool stores: every string of a request, a task state or a JSON value.

`evidence_put`, `memory_write`, `checkpoint_save`, `action_intent`, `action_result` and `compress_history` pass what
they are about to store through `redacted`, so no text field is left out because nobody listed it. Lookups by a
stored key (an idempotency key, a memory key) pass the key through it too, so a key holding a secret is found again.

The result depends only on the value (each string is redacted on its own, by `redact_secrets`): the same fact value
gives the same marker in every version, so verification compares redacted values as it compared clear ones, and the
same idempotency key always names the same entry.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ctxkeep.errors import InvalidInput
from ctxkeep.tools.redaction.redact import redact_secrets

V = TypeVar("V")


def redacted(value: V, what: str = "the request") -> tuple[V, int]:
    """`value` (a string, a pydantic model, or lists and dicts of them, dict keys included) with every secret in
    every string replaced by a `[REDACTED:<kind>]` marker, and how many were replaced. Unchanged parts are the same
    objects. A model that changed is validated again (its invariants hold on what is stored); raises InvalidInput
    naming `what` when the markers break one (two fact keys that differed only by a secret, a field now too long)."""
    count = [0]
    result = _walk(value, count)
    if count[0] and isinstance(result, BaseModel):
        try:
            result = type(result).model_validate(result.model_dump())
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or what
            raise InvalidInput(
                f"{what} holds secrets, and with them replaced by [REDACTED:…] markers {where} is invalid: "
                f"{problem['msg']}. Keep secrets out of it (store them nowhere, or name where they are kept)"
            ) from None
    return result, count[0]


def _walk(value: Any, count: list[int]) -> Any:
    if isinstance(value, str):
        text, found = redact_secrets(value)
        count[0] += found
        return text
    if isinstance(value, BaseModel):
        changes = {}
        for name in type(value).model_fields:
            before = getattr(value, name)
            after = _walk(before, count)
            if after is not before:
                changes[name] = after
        return value.model_copy(update=changes) if changes else value
    if isinstance(value, list):
        items = [_walk(item, count) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if isinstance(value, dict):
        pairs = [(_walk(key, count), _walk(item, count)) for key, item in value.items()]
        changed = any(k is not key or v is not item for (k, v), (key, item) in zip(pairs, value.items(), strict=True))
        return dict(pairs) if changed else value
    return value
