"""A stdlib-only MCP-over-HTTP probe: initialize, then one tools/call, with or without a bearer token.

Imported by tests/server/test_http.py, and run as a script by another local user's Python (which has no ctxkeep, no SDK):
`python3 http_probe.py URL TOKEN|- TOOL ARGUMENTS_JSON [FILE ...]` prints a JSON report, including whether each FILE
could be read.
"""

from __future__ import annotations

import json
import sys
import urllib.error
import urllib.request
from collections.abc import Iterable
from typing import Any

ACCEPT = "application/json, text/event-stream"


def post(
    url: str, message: Any, headers: dict[str, str], body: bytes | Iterable[bytes] | None = None
) -> tuple[int, dict[str, str], bytes]:
    """POST one JSON-RPC message (or a raw `body`, pieces sent chunked); the status, the headers (lower-case names) and the body."""
    data = body if body is not None else json.dumps(message).encode()
    request = urllib.request.Request(
        url, data=data, headers={"Content-Type": "application/json", "Accept": ACCEPT, **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return int(response.status), {k.lower(): v for k, v in response.headers.items()}, response.read()
    except urllib.error.HTTPError as exc:
        return int(exc.code), {k.lower(): v for k, v in exc.headers.items()}, exc.read()


def decode(headers: dict[str, str], body: bytes) -> Any:
    """The JSON-RPC message in a response body, plain JSON or the last `data:` event of an SSE stream."""
    if headers.get("content-type", "").startswith("text/event-stream"):
        events = [line[5:].strip() for line in body.decode().splitlines() if line.startswith("data:")]
        return json.loads(events[-1]) if events else None
    return json.loads(body) if body else None


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "0"}},
}


def session(url: str, token: str | None, scheme: str = "Bearer") -> tuple[int, dict[str, str]]:
    """Initialize; the status, and the headers every later request of this session must carry."""
    headers = {"Authorization": f"{scheme} {token}"} if token else {}
    status, got, _ = post(url, INITIALIZE, headers)
    if status != 200:
        return status, headers
    headers = {**headers, "Mcp-Session-Id": got.get("mcp-session-id", ""), "Mcp-Protocol-Version": "2025-06-18"}
    post(url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
    return status, headers


def call(url: str, token: str | None, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Initialize and call one tool: the initialize status, and the call's status and answer when it got that far."""
    status, headers = session(url, token)
    report: dict[str, Any] = {"initialize": status}
    if status == 200:
        code, got, body = post(
            url,
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
            headers,
        )
        report.update(call=code, answer=decode(got, body))
    return report


def main(argv: list[str]) -> None:
    url, token, tool, arguments, *files = argv
    report = call(url, None if token == "-" else token, tool, json.loads(arguments))
    for path in files:
        try:
            with open(path, "rb") as handle:
                report[path] = "read: " + handle.read(64).decode(errors="replace")
        except OSError as exc:
            report[path] = type(exc).__name__
    print(json.dumps(report))


if __name__ == "__main__":
    main(sys.argv[1:])
