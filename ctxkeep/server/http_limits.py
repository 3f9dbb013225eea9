"""Connection limits of `serve --http`, before any token check: no request may stay half-sent forever, and half-sent
requests can neither pile up past the file descriptors nor lock a client out.

What uvicorn offers, and what is used of it: `timeout_keep_alive` closes a connection idle after a response (5 s);
`h11_max_incomplete_event_size` caps a request head (16 KiB, answered 400 beyond). `limit_concurrency` is not used:
it counts half-sent connections too and answers 503 to the next *complete* request once they reach the limit, so it
would lock out the legitimate client exactly when an attacker holds the slots. What uvicorn lacks is added by
`GuardedH11`, its h11 protocol with two more rules:

- A read timeout while a request is incomplete: a connection that has sent nothing yet, part of a head, or part of a
  body, and then nothing for READ_TIMEOUT_S, is closed. Every arrival re-arms it, so an upload that keeps sending is
  never cut, and it waits while the server itself paused reading (flow control).
- A cap on connections (MAX_CONNECTIONS, lower when the process may open few files): a new connection past it closes
  the oldest connection that has no complete request (half-sent, or idle between requests); only when every
  connection carries a request being served is the new one closed instead.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

READ_TIMEOUT_S = 10.0
KEEP_ALIVE_S = 5
MAX_HEAD_BYTES = 16 * 1024
MAX_CONNECTIONS = 256


def connection_cap() -> int:
    """MAX_CONNECTIONS, or a quarter of the files this process may open when that is fewer (macOS allows 256 by
    default): the database, the log and the listening socket need descriptors too."""
    if sys.platform == "win32":
        return MAX_CONNECTIONS
    import resource

    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return MAX_CONNECTIONS if soft == resource.RLIM_INFINITY else max(8, min(MAX_CONNECTIONS, soft // 4))


class GuardedH11(H11Protocol):
    """uvicorn's h11 protocol with a read timeout for incomplete requests and a connection cap (see the module)."""

    read_timeout = READ_TIMEOUT_S

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._opened_at = self.loop.time()
        self._served = False  # a response went out: between requests the keep-alive timeout applies
        self._read_timer: asyncio.TimerHandle | None = None
        self._arm()
        self._make_room()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def on_response_complete(self) -> None:
        self._served = True
        super().on_response_complete()
        self._arm()  # the next request may already be arriving (pipelined), or the keep-alive timer takes over

    def waiting_for_client(self) -> bool:
        """Whether the request on this connection is incomplete: no byte yet, part of a head, part of a body."""
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            return True
        if state is not h11.IDLE:
            return False
        return not self._served or bool(self.conn.trailing_data[0])

    def _idle(self) -> bool:
        """No complete request on this connection is being served: it may be closed to make room."""
        return self.cycle is None or self.cycle.response_complete or self.conn.their_state is h11.SEND_BODY

    def _arm(self) -> None:
        self._disarm()
        if not self.transport.is_closing() and self.waiting_for_client():
            self._read_timer = self.loop.call_later(self.read_timeout, self._timed_out)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _timed_out(self) -> None:
        self._read_timer = None
        if self.transport.is_closing():
            return
        if self.flow.read_paused:  # the server stopped reading, not the client sending: wait on
            self._arm()
        elif self.waiting_for_client():
            self.transport.close()

    def _make_room(self) -> None:
        """Past the cap, close the oldest open connection with no complete request (a closing one still counts until
        its close is done, so it is not chosen twice), or else this new one."""
        live = [c for c in self.connections if isinstance(c, GuardedH11) and not c.transport.is_closing()]
        if len(live) <= connection_cap():  # read each time (one system call): the limit may change while serving
            return
        others = [c for c in live if c is not self and c._idle()]
        if others:
            min(others, key=lambda c: c._opened_at).transport.close()
        else:
            self.transport.close()


def connection_limits() -> dict[str, Any]:
    """uvicorn.run's options for the limits above. The backlog is the cap too: asyncio accepts up to a backlog of
    connections in one go before the protocol sees any of them, and a batch past the free descriptors makes every
    accept fail for a second (EMFILE), the legitimate client's included."""
    return {
        "http": GuardedH11,
        "backlog": connection_cap(),
        "timeout_keep_alive": KEEP_ALIVE_S,
        "h11_max_incomplete_event_size": MAX_HEAD_BYTES,
    }
