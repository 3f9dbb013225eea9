"""Field-by-field differences between two task states, in TaskState field order."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from ctxkeep.models import Change, TaskState
from ctxkeep.text import canonical_json, match_key

_SCALARS = ("goal", "verification_state", "next_action", "phase")
_KEYED = {"dropped": "item", "facts": "key", "failed_approaches": "approach", "approvals": "id"}


def diff_states(before: TaskState, after: TaskState) -> list[Change]:
    """What changed from `before` to `after`: items added, removed, or changed in place."""
    changes: list[Change] = []
    for name in TaskState.model_fields:
        old, new = getattr(before, name), getattr(after, name)
        if name in _SCALARS or name == "extra":
            if canonical_json(_plain(old)) != canonical_json(_plain(new)):
                changes.append(Change(field=name, op="changed", item=name, before=_plain(old), after=_plain(new)))
        elif name in _KEYED:
            changes += _keyed_changes(name, _KEYED[name], old, new)
        else:
            changes += _list_changes(name, old, new)
    return changes


def _plain(value: Any) -> Any:
    return value.model_dump(mode="json") if isinstance(value, BaseModel) else value


def _list_changes(name: str, old: list[str], new: list[str]) -> list[Change]:
    old_keys, new_keys = {match_key(i) for i in old}, {match_key(i) for i in new}
    removed = [Change(field=name, op="removed", item=i) for i in old if match_key(i) not in new_keys]
    added = [Change(field=name, op="added", item=i) for i in new if match_key(i) not in old_keys]
    return removed + added


def _keyed_changes(name: str, key: str, old: list[BaseModel], new: list[BaseModel]) -> list[Change]:
    old_by = {match_key(getattr(i, key)): i for i in old}
    new_by = {match_key(getattr(i, key)): i for i in new}
    changes = []
    for k, item in old_by.items():
        if k not in new_by:
            changes.append(Change(field=name, op="removed", item=getattr(item, key), before=_plain(item)))
        elif canonical_json(_plain(item)) != canonical_json(_plain(new_by[k])):
            changes.append(
                Change(field=name, op="changed", item=getattr(item, key), before=_plain(item), after=_plain(new_by[k]))
            )
    changes += [
        Change(field=name, op="added", item=getattr(i, key), after=_plain(i))
        for k, i in new_by.items()
        if k not in old_by
    ]
    return changes
