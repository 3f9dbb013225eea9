"""The hooks' offloads taken in by a running server: after it starts and after any tool call, in the background.

A hook keeps an output it offloaded in an inbox (the database file's, or with PostgreSQL the hooks' local spool) under
the ref the model was shown; `take_offloads` stores them as evidence. The reads that look evidence up take them in
first themselves; every other call only nudges this drain, which runs at most once a second per project, never in
the way of the call, and logs a failure once (the offloads wait in the inbox for the next drain).
"""

from __future__ import annotations

import logging

import anyio

from ctxkeep.errors import CtxkeepError
from ctxkeep.tools.evidence import take_offloads
from ctxkeep.tools.scope import Scope

logger = logging.getLogger("ctxkeep")
INTERVAL_S = 1.0


class OffloadDrain:
    """Takes in the hooks' offloads of each project a call nudged it for (`nudge`), one drain at a time."""

    def __init__(self) -> None:
        self._waiting: dict[str, Scope] = {}
        self._wanted = anyio.Event()
        self._last_failure = ""

    def nudge(self, scope: Scope) -> None:
        """Ask for a drain of the scope's project (cheap: the drain runs later, in the background)."""
        if scope.project not in self._waiting:
            self._waiting[scope.project] = scope
        self._wanted.set()

    async def run(self) -> None:
        """Drain whenever nudged, at most once per INTERVAL_S; runs until cancelled."""
        while True:
            await self._wanted.wait()
            self._wanted = anyio.Event()
            scopes, self._waiting = list(self._waiting.values()), {}
            for scope in scopes:
                await self._drain(scope)
            await anyio.sleep(INTERVAL_S)

    async def _drain(self, scope: Scope) -> None:
        try:
            taken = await take_offloads(scope)
        except CtxkeepError as exc:
            if str(exc) != self._last_failure:
                logger.warning("ctxkeep could not take in the hooks' offloads (they wait for the next call): %s", exc)
            self._last_failure = str(exc)
            return
        except Exception as exc:  # a bug must not stop the drain, nor the server
            logger.exception("ctxkeep: taking in the hooks' offloads failed: %s", exc)
            return
        self._last_failure = ""
        if taken:
            logger.info("ctxkeep took in %d offloaded output(s) of %s", taken, scope.project)
