"""One redaction for everything a tool stores: every string of a request, a task state or a JSON value.

`evidence_put`, `memory_write`, `checkpoint_save`, `action_intent`, `action_result` and `compress_history` pass what
they are about to store through `redacted`, so no text field is left out because nobody listed it. Lookups by a
stored key (an idempotency key, a memory key) pass the key through it too, so a key holding a secret is found again.

The result depends only on the value (each string is redacted on its own, by `redact_secrets`): the same fact value
gives the same marker in every version, so verification compares redacted values as it compared clear ones, and the
same idempotency key always names the same entry.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ctxkeep.errors import InvalidInput
from ctxkeep.tools.redaction.redact import redact_each

V = TypeVar("V")


def redacted(value: V, what: str = "the request") -> tuple[V, int]:
    """`value` (a string, a pydantic model, or lists and dicts of them, dict keys included) with every secret in
    every string replaced by a `[REDACTED:<kind>]` marker, and how many were replaced. Unchanged parts are the same
    objects. A model that changed is validated again (its invariants hold on what is stored); raises InvalidInput
    naming `what` when the markers break one (two fact keys that differed only by a secret, a field now too long)."""
    texts: list[str] = []
    _collect(value, texts)
    done = redact_each(texts)
    count = sum(found for _, found in done)
    if not count:
        return value, 0
    result = _rebuild(value, iter([text for text, _ in done]))
    if isinstance(result, BaseModel):
        try:
            result = type(result).model_validate(result.model_dump())
        except ValidationError as exc:
            problem = exc.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or what
            raise InvalidInput(
                f"{what} holds secrets, and with them replaced by [REDACTED:…] markers {where} is invalid: "
                f"{problem['msg']}. Keep secrets out of it (store them nowhere, or name where they are kept)"
            ) from None
    return result, count


def _collect(value: Any, texts: list[str]) -> None:
    """Every string in `value`, in the order `_rebuild` visits them."""
    if isinstance(value, str):
        texts.append(value)
    elif isinstance(value, BaseModel):
        for name in type(value).model_fields:
            _collect(getattr(value, name), texts)
    elif isinstance(value, list):
        for item in value:
            _collect(item, texts)
    elif isinstance(value, dict):
        for key, item in value.items():
            _collect(key, texts)
            _collect(item, texts)


def _rebuild(value: Any, texts: Iterator[str]) -> Any:
    """`value` with its strings taken, in order, from `texts`; unchanged parts are the same objects."""
    if isinstance(value, str):
        return next(texts)
    if isinstance(value, BaseModel):
        changes = {}
        for name in type(value).model_fields:
            before = getattr(value, name)
            after = _rebuild(before, texts)
            if after is not before:
                changes[name] = after
        return value.model_copy(update=changes) if changes else value
    if isinstance(value, list):
        items = [_rebuild(item, texts) for item in value]
        return items if any(a is not b for a, b in zip(items, value, strict=True)) else value
    if isinstance(value, dict):
        pairs = [(_rebuild(key, texts), _rebuild(item, texts)) for key, item in value.items()]
        changed = any(k is not key or v is not item for (k, v), (key, item) in zip(pairs, value.items(), strict=True))
        return dict(pairs) if changed else value
    return value
