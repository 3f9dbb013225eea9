"""`typing.NamedTuple`'s class syntax without importing `typing`, for the modules the per-event hooks load.

Importing `typing` costs every hook process ~3 ms, a tenth of what a hook adds to a bare interpreter, and the hooks
need it only to declare named tuples. Those modules write

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from typing import NamedTuple
    else:
        from ctxkeep.named_tuple import NamedTuple

so type checkers see typing's class and the running hook gets a `collections.namedtuple` with the same fields, defaults,
methods and docstring. Field annotations are only read for their names, so the declaring module needs
`from __future__ import annotations` (every hook module has it). Standard library only.
"""

from __future__ import annotations

import collections

# what a class body defines for itself, not as a field or method of the tuple
_CLASS_KEYS = {"__module__", "__qualname__", "__annotations__", "__dict__", "__weakref__", "__orig_bases__"}


class _NamedTupleMaker(type):
    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, object]) -> type:
        if not bases:  # NamedTuple itself
            return super().__new__(mcs, name, bases, namespace)
        if "__annotations__" not in namespace and "__annotate__" in namespace:  # Python 3.14's lazy annotations
            raise TypeError(f"{name}: declare it in a module with `from __future__ import annotations`")
        annotations = namespace.get("__annotations__", {})
        fields = list(annotations) if isinstance(annotations, dict) else []
        with_default = [field for field in fields if field in namespace]
        if with_default != fields[len(fields) - len(with_default) :]:
            raise TypeError(f"{name}: the fields with a default must come last ({', '.join(with_default)})")
        defaults = [namespace[field] for field in with_default]
        module = str(namespace.get("__module__", __name__))
        made = collections.namedtuple(name, fields, defaults=defaults, module=module)  # type: ignore[misc]
        for key, value in namespace.items():
            if key not in _CLASS_KEYS and key not in fields:
                setattr(made, key, value)
        made.__qualname__ = str(namespace.get("__qualname__", name))
        return made


class NamedTuple(metaclass=_NamedTupleMaker):
    """Subclass it as `typing.NamedTuple`: `class Point(NamedTuple): x: int; y: int = 0` makes a named tuple class."""
