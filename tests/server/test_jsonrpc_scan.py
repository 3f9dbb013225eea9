"""The streaming scan that finds a request's top-level id: on any JSON text, cut into any pieces, it gives the top
level with nested values collapsed, so a nested "id" is never taken for the request's, and it nests no deeper than
the text does. (The wire behaviour is tested over a real server in test_stdio_jsonrpc.py and test_stdio_hostile.py.)"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxkeep.server.jsonrpc_check import oversize
from ctxkeep.server.jsonrpc_scan import CUT, STRING_BYTES, Scan

tricky_text = st.lists(st.sampled_from(list('ab"\\{}[]:, \n\u00e9\U0001f600') + ["id", '"id"']), max_size=12).map(
    "".join
)
scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | tricky_text
    | st.just("long \\" * 300)
)
values = st.recursive(
    scalars, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(tricky_text, inner, max_size=4), max_leaves=20
)


def _collapsed(value: Any, level: int = 0, keep: int = 1) -> Any:
    if isinstance(value, str) and level <= keep and len(json.dumps(value).encode()) > STRING_BYTES + 1:
        return CUT
    if isinstance(value, dict):
        return {key: _collapsed(item, level + 1, keep) for key, item in value.items()} if level < keep else {}
    if isinstance(value, list):
        return [_collapsed(item, level + 1, keep) for item in value] if level < keep else []
    return value


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max((_depth(item) for item in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((_depth(item) for item in value), default=0)
    return 0


def _scan(text: bytes, cuts: list[int]) -> Scan:
    scan, start = Scan(), 0
    for cut in sorted(cut % (len(text) + 1) for cut in cuts):
        scan.feed(text[start:cut])
        start = cut
    scan.feed(text[start:])
    return scan


@settings(max_examples=400, deadline=None)
@given(
    message=st.dictionaries(tricky_text, values, max_size=6),
    cuts=st.lists(st.integers(min_value=0), max_size=8),
    ascii_only=st.booleans(),
)
def test_the_top_level_is_found_in_any_pieces_and_nested_values_never_leak_into_it(
    message: dict[str, Any], cuts: list[int], ascii_only: bool
) -> None:
    text = json.dumps(message, ensure_ascii=ascii_only).encode()
    scan = _scan(text, cuts)
    assert scan.values() == [_collapsed(message)]
    assert scan.max_depth == _depth(message)


@settings(max_examples=200, deadline=None)
@given(
    batch=st.lists(st.dictionaries(tricky_text, values, max_size=4), max_size=4),
    cuts=st.lists(st.integers(min_value=0), max_size=8),
)
def test_a_batch_keeps_each_message_top_level(batch: list[dict[str, Any]], cuts: list[int]) -> None:
    scan = _scan(json.dumps(batch).encode(), cuts)
    assert scan.values() == [[_collapsed(message, 1, 2) for message in batch]]


def test_the_id_after_a_large_params_with_a_nested_id_first_is_the_one_answered() -> None:
    head = b'{"jsonrpc": "2.0", "method": "tools/call", "params": {"arguments": {"id": "nested", "content": "'
    scan = Scan()
    scan.feed(head)
    for _ in range(50):
        scan.feed(b'x\\"}]{["id": 3' * 10_000)
    scan.feed(b'"}}, "id": 77}')
    [error] = oversize(scan, 1, 1)
    assert error.id == 77


def test_a_long_top_level_string_is_cut_and_a_cut_id_is_not_used() -> None:
    scan = Scan()
    scan.feed(json.dumps({"jsonrpc": "2.0", "id": "i" * 5_000, "method": "x"}).encode())
    assert scan.values() == [{"jsonrpc": "2.0", "id": CUT, "method": "x"}]
    [error] = oversize(scan, 1, 1)
    assert error.id is None


def test_a_text_cut_short_still_gives_its_top_level_id_and_garbage_gives_none() -> None:
    for text, expected in (
        (b'{"jsonrpc": "2.0", "params": {"id": 1, "a": [', None),
        (b'{"jsonrpc": "2.0", "params": {"id": 1}, "id": 9, "x": [', 9),
        (b'{"id": "a\\"b", "params": {', 'a"b'),
        (b"]]", None),
        (b"not json", None),
    ):
        scan = Scan()
        scan.feed(text)
        assert scan.values() is None and scan.fallback_id() == expected, text
