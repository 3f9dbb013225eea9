"""What the loopback mocks of the model APIs share: a scripted model, a request recorder, a server thread.

stdlib only. A mock answers the real CLI's model requests from a script of turns and records every
request it receives (method, path, headers, parsed body, kind), so a test can assert on exactly what
the CLI sent to the model: the tool definitions, the system text, the tool results.

A turn is `text("…")` (a final answer) or `call("checkpoint_save", {...})` (a tool call; the name is
matched against the tools the request advertises, so the short ctxkeep name finds
`mcp__ctxkeep__checkpoint_save`, Codex's namespaced tool or Gemini's `mcp_ctxkeep_checkpoint_save`).
Turns are consumed in order by the CLI's main-loop requests; after the last one the model says "done.".
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SECRET_HEADERS = {"authorization", "x-api-key", "x-goog-api-key"}


@dataclass(frozen=True)
class Turn:
    """One scripted model reply: optional text, then tool calls (name, arguments) in order."""

    text: str | None = None
    calls: tuple[tuple[str, dict[str, Any]], ...] = ()


def text(reply: str) -> Turn:
    return Turn(text=reply)


def call(tool: str, arguments: dict[str, Any] | None = None, *more: tuple[str, dict[str, Any]]) -> Turn:
    """A turn that calls `tool` (then each of `more`, in parallel as one reply)."""
    return Turn(calls=((tool, arguments or {}), *more))


DONE = Turn(text="done.")


@dataclass(frozen=True)
class Seen:
    """An argument the scripted model fills in from what it was sent: the last match of `pattern` in the request (as
    JSON text), e.g. the evidence ref a shaped tool output named."""

    pattern: str


def fill(turn: Turn, body: Any) -> Turn:
    """The turn with every `Seen` argument replaced by the last match in `body` ("" when nothing matches)."""
    import re

    seen = json.dumps(body)

    def value(v: Any) -> Any:
        if isinstance(v, Seen):
            found = re.findall(v.pattern, seen)
            return found[-1] if found else ""
        return {k: value(x) for k, x in v.items()} if isinstance(v, dict) else v

    return Turn(turn.text, tuple((name, value(args)) for name, args in turn.calls))


@dataclass
class Recorded:
    """One HTTP request as the mock received it (secrets stripped from the headers)."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any
    kind: str
    turn: int | None = None


def resolve(advertised: Iterable[str], want: str, separator: str) -> str:
    """The advertised tool name for `want`: equal, or ending in `<separator><want>`; else `want` itself."""
    names = list(advertised)
    if want in names:
        return want
    for name in names:
        if name.endswith(separator + want):
            return name
    return want


@dataclass
class Script:
    """The turns of a scripted model, handed out in order (thread-safe); DONE once they run out."""

    turns: list[Turn]
    used: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def next(self) -> tuple[int | None, Turn]:
        with self.lock:
            if self.used >= len(self.turns):
                return None, DONE
            self.used += 1
            return self.used - 1, self.turns[self.used - 1]


class MockHandler(BaseHTTPRequestHandler):
    """Base handler: reads the JSON body, records the request, lets the subclass answer."""

    protocol_version = "HTTP/1.1"
    server: MockServer

    def log_message(self, format: str, *args: Any) -> None:  # the CLI's traffic is in `requests`, not on stderr
        pass

    def body(self) -> Any:
        size = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(size) if size else b""
        try:
            return json.loads(raw) if raw else None
        except ValueError:
            return raw.decode("utf-8", "replace")

    def record(self, body: Any, kind: str, turn: int | None = None) -> None:
        headers = {k.lower(): v for k, v in self.headers.items() if k.lower() not in SECRET_HEADERS}
        self.server.add(Recorded(self.command, self.path, headers, body, kind, turn))

    def send_json(self, code: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def send_sse(self, events: Iterable[tuple[str | None, Any]]) -> None:
        """Server-sent events, then close the connection (the CLIs read to the end of the stream)."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        for event, data in events:
            head = f"event: {event}\n" if event else ""
            self.wfile.write(f"{head}data: {json.dumps(data)}\n\n".encode())
            self.wfile.flush()

    def do_GET(self) -> None:
        self.record(None, "other")
        self.send_json(404, {"error": {"message": "not mocked"}})

    do_HEAD = do_GET
    do_DELETE = do_GET


class MockServer(ThreadingHTTPServer):
    """A model API on a free loopback port, served from a daemon thread; `requests` grows as the CLI talks."""

    daemon_threads = True

    def __init__(self, handler: type[MockHandler], script: list[Turn]) -> None:
        super().__init__(("127.0.0.1", 0), handler)
        self.script = Script(list(script))
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, name="mock-model-api", daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def add(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def of_kind(self, kind: str) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.kind == kind]

    def __enter__(self) -> MockServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(5)
