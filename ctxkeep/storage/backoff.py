"""Trying a database again after it could not be reached: the next call tries, but not sooner than a short backoff
(0.25 s, doubling to 2 s), so a server that is down is not hammered by every call while it is, and service is back
within about two seconds of the database. Until the next attempt is due, calls fail at once with the last error."""

from __future__ import annotations

import time
from collections.abc import Callable

from ctxkeep.errors import StorageError

FIRST_S, LONGEST_S = 0.25, 2.0


class Backoff:
    """When the next attempt to reach a database is due; `check()` raises the last failure until then."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._delay = 0.0
        self._due = 0.0
        self._failure: StorageError | None = None

    def check(self) -> None:
        """Raise the last failure while the next attempt is not due yet (nothing when the database was reachable)."""
        if self._failure is not None and self._clock() < self._due:
            raise type(self._failure)(str(self._failure))

    def failed(self, failure: StorageError) -> None:
        self._delay = min(LONGEST_S, self._delay * 2) if self._delay else FIRST_S
        self._due = self._clock() + self._delay
        self._failure = failure

    def succeeded(self) -> None:
        self._delay, self._failure = 0.0, None
