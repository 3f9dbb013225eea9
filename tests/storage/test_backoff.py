"""Trying an unreachable database again (ctxkeep/storage/backoff.py): the next call tries, not sooner than the backoff
(0.25 s doubling to 2 s), calls before that fail at once with the last error, and a success resets it."""

from __future__ import annotations

import pytest

from ctxkeep.errors import DatabaseUnavailable, SchemaTooNew
from ctxkeep.storage.backoff import Backoff


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_calls_fail_at_once_until_the_next_attempt_is_due_and_the_delay_doubles_up_to_two_seconds() -> None:
    clock = Clock()
    backoff = Backoff(clock)
    backoff.check()  # reachable so far: nothing to wait for
    for delay in (0.25, 0.5, 1.0, 2.0, 2.0, 2.0):
        backoff.failed(DatabaseUnavailable("database x is unreachable"))
        started = clock.now
        clock.now = started + delay - 0.01
        with pytest.raises(DatabaseUnavailable, match="unreachable"):
            backoff.check()  # not due yet: the last error, at once
        clock.now = started + delay
        backoff.check()  # due: the call may try again


def test_a_success_resets_it_and_the_error_keeps_its_kind() -> None:
    clock = Clock()
    backoff = Backoff(clock)
    backoff.failed(SchemaTooNew("database x has schema version 99"))
    with pytest.raises(SchemaTooNew):
        backoff.check()
    backoff.succeeded()
    backoff.check()
    backoff.failed(DatabaseUnavailable("down again"))
    clock.now += 0.26
    backoff.check()  # the first delay again, not the doubled one
