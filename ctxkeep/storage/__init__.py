"""Storage: the only package that talks SQL. Tools use the `Store` interface and the rows; backends are subpackages.

`open_store(location)` picks the backend: `sqlite/` for a file, `postgres/` for a postgresql:// URL. Imports nothing
of tools, server, clients or cli. Names are imported on first use, so the hooks' fast path (`sqlite/hook_session.py`, standard
library only) loads neither the interface nor the rows.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import Any

    from ctxkeep.storage.backends import open_store
    from ctxkeep.storage.interface import LATEST_SCHEMA, Store, Tx
    from ctxkeep.storage.rows import (
        ActionRow,
        CheckpointRow,
        CursorRow,
        DigestRow,
        EvidenceRow,
        InboxRow,
        InjectionRow,
        LeaseRow,
        MemoryRow,
        NewEvidence,
        SearchFilter,
        SeenSessionRow,
        SessionRow,
        ShownRow,
        TaskRow,
        TokenRow,
        TombstoneRow,
        WorkingSetRow,
    )

_MODULE = {
    "LATEST_SCHEMA": "interface",
    "Store": "interface",
    "Tx": "interface",
    "open_store": "backends",
    **dict.fromkeys(
        [
            "ActionRow",
            "CheckpointRow",
            "CursorRow",
            "DigestRow",
            "EvidenceRow",
            "InboxRow",
            "InjectionRow",
            "LeaseRow",
            "MemoryRow",
            "NewEvidence",
            "SearchFilter",
            "SeenSessionRow",
            "SessionRow",
            "ShownRow",
            "TaskRow",
            "TokenRow",
            "TombstoneRow",
            "WorkingSetRow",
        ],
        "rows",
    ),
}
__all__ = [
    "ActionRow",
    "CheckpointRow",
    "CursorRow",
    "DigestRow",
    "EvidenceRow",
    "InboxRow",
    "InjectionRow",
    "LATEST_SCHEMA",
    "LeaseRow",
    "MemoryRow",
    "NewEvidence",
    "SearchFilter",
    "SeenSessionRow",
    "SessionRow",
    "ShownRow",
    "Store",
    "TaskRow",
    "TokenRow",
    "TombstoneRow",
    "Tx",
    "WorkingSetRow",
    "open_store",
]


def __getattr__(name: str) -> Any:
    module = _MODULE.get(name)
    if module is None:
        raise AttributeError(f"module 'ctxkeep.storage' has no attribute {name!r}")
    import importlib  # here: the hooks' fast path imports this package, never its names

    value = getattr(importlib.import_module(f"ctxkeep.storage.{module}"), name)
    globals()[name] = value
    return value
