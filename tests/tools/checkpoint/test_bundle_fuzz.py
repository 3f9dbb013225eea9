"""Random damage to a valid bundle (issue 24 item 11): a key deleted, a value replaced by random JSON (deep nesting,
wrong types, lone surrogates, NUL, huge numbers), a list item duplicated; then sealed again, or sealed and hash-chained
again, so the damage reaches the checks behind the seal and the chain. `import_bundle` either merges it or raises
one of ctxkeep's own errors with a one-line message, never a traceback, and a refused import writes nothing. On both
stores."""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ctxkeep.errors import CtxkeepError
from ctxkeep.storage import open_store
from ctxkeep.tools.checkpoint import export_bundle, import_bundle
from ctxkeep.tools.scope import Scope
from tests.db_dump import is_postgres, stored
from tests.pg import fresh_schema
from tests.tools.checkpoint.test_bundle_checks import TABLES, _rechained
from tests.tools.checkpoint.test_bundles import _resealed, alice_scope, history

_fresh_projects = itertools.count()
text = st.one_of(st.text(max_size=20), st.just("\x00"), st.just("\ud800"), st.just("ev_" + "0" * 24))
leaves = st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats(allow_nan=False) | text
json_values = st.recursive(
    leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=12,
) | st.just(json.loads("[" * 150 + "]" * 150))


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield path
    if isinstance(value, dict):
        for key, child in value.items():
            yield from _paths(child, (*path, key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from _paths(child, (*path, index))


def _damaged(data: dict[str, Any], path: tuple[Any, ...], how: str, value: Any) -> dict[str, Any]:
    data = copy.deepcopy(data)
    if not path:
        return data
    parent = data
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if how == "delete":
        del parent[last]
    elif how == "duplicate" and isinstance(parent, list):
        parent.insert(last, copy.deepcopy(parent[last]))
    else:
        parent[last] = value
    return data


def _sealed_again(data: dict[str, Any], seal: str) -> str:
    if seal == "rechain":
        try:
            data = _rechained(data)
        except (
            KeyError,
            TypeError,
            AttributeError,
            IndexError,
            UnicodeEncodeError,
        ):  # the damage broke the chain input
            pass
    try:
        return json.dumps(data, ensure_ascii=False) if seal == "none" else _resealed(data)
    except UnicodeEncodeError:  # a lone surrogate has no UTF-8, so no seal: the bundle goes as it is
        return json.dumps(data)


@pytest.fixture
def bundle_db(db_path: Path, tmp_path: Path) -> Iterator[tuple[Path, dict[str, Any]]]:
    """A fresh database to import into, and a valid bundle (from db_path) to damage."""

    async def exported() -> dict[str, Any]:
        store = await open_store(db_path)
        try:
            await history(alice_scope(store))
            parsed: dict[str, Any] = json.loads(await export_bundle(alice_scope(store), "proc"))
            return parsed
        finally:
            await store.close()

    data = anyio.run(exported)
    if is_postgres(db_path):
        with fresh_schema() as url:
            yield url, data  # type: ignore[misc]
    else:
        yield tmp_path / "importer.db", data


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    choice=st.data(),
    how=st.sampled_from(["delete", "replace", "duplicate"]),
    seal=st.sampled_from(["reseal", "rechain", "none"]),
    value=json_values,
)
def test_random_damage_to_a_bundle_never_ends_in_a_traceback_nor_a_half_write(
    bundle_db: tuple[Path, dict[str, Any]], choice: st.DataObject, how: str, seal: str, value: Any
) -> None:
    location, data = bundle_db
    path = choice.draw(st.sampled_from(list(_paths(data))[1:]))
    text = _sealed_again(_damaged(data, path, how, value), seal)
    project = f"/fuzz/{next(_fresh_projects)}"  # a fresh project each time: an import that succeeds changes no other

    async def attempt() -> None:
        store = await open_store(location)
        try:
            before = stored(location, TABLES)
            try:
                await import_bundle(Scope(store, project), text)
            except CtxkeepError as exc:
                assert "\n" not in str(exc) and str(exc)
                assert stored(location, TABLES) == before, f"{type(exc).__name__}: {exc}"
        finally:
            await store.close()

    anyio.run(attempt)
