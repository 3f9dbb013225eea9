"""ctxkeep.named_tuple behaves as typing.NamedTuple for what the hook modules declare with it."""

from __future__ import annotations

import subprocess
import sys
import typing

import pytest

from ctxkeep.named_tuple import NamedTuple


class Ours(NamedTuple):
    """A record."""

    kind: str
    key: str
    status: str = ""
    count: int = 0

    def label(self) -> str:
        return f"{self.kind}:{self.key}"

    @property
    def empty(self) -> bool:
        return not self.status


class Theirs(typing.NamedTuple):
    """A record."""

    kind: str
    key: str
    status: str = ""
    count: int = 0

    def label(self) -> str:
        return f"{self.kind}:{self.key}"

    @property
    def empty(self) -> bool:
        return not self.status


@pytest.mark.parametrize("cls", [Ours, Theirs])
def test_fields_defaults_methods_and_tuple_behaviour_match_typings(cls: type) -> None:
    made = cls("rule", "k", count=2)
    assert made._fields == ("kind", "key", "status", "count")
    assert (tuple(made), made.label(), made.empty) == (("rule", "k", "", 2), "rule:k", True)
    assert made._replace(status="done") == cls("rule", "k", "done", 2)
    assert made == ("rule", "k", "", 2) and hash(made) == hash(("rule", "k", "", 2))
    assert (cls.__doc__, cls.__name__, cls.__module__) == ("A record.", cls.__qualname__, __name__)
    assert repr(made) == f"{cls.__name__}(kind='rule', key='k', status='', count=2)"
    with pytest.raises(TypeError):
        cls("only kind")


def test_a_field_without_default_after_one_with_a_default_is_refused() -> None:
    with pytest.raises(TypeError, match="the fields with a default must come last"):

        class Wrong(NamedTuple):
            first: str = ""
            second: str


def test_the_module_needs_no_typing() -> None:
    probe = "import sys\nsys.modules['typing'] = None\nimport ctxkeep.named_tuple\nprint('ok')"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "ok", done.stderr
