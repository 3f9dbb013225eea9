"""The scope every capability runs in: an open Store, the project key, and a clock."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from ctxkeep.storage import Store


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


@dataclass(frozen=True)
class Scope:
    """Where a tool call reads and writes: one database, one project; `clock` is injectable for tests."""

    store: Store
    project: str
    clock: Callable[[], datetime] = field(default=utc_now)
