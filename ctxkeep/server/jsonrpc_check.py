"""Exactly one answer for every request: what the stdio reader checks before a line reaches the SDK.

The SDK drops a line it cannot validate without a word: a lone surrogate escape, nesting over about 200 levels, an
integer over 4,300 digits, a batch, two objects on one line, a missing or wrong `jsonrpc`, `params` that is not an
object. Worse, it takes a request whose `id` is a float, a bool, null or an object for a notification, and never
answers it. `check` answers each such line with errors instead: -32700 (parse error) or -32600 (invalid request),
carrying the request's id when it can be read and `id: null` otherwise, one error per request a line holds. A line
it passes is one valid JSON-RPC message the SDK accepts. `oversize` answers a line over the size limit the same way,
from its scan alone.
"""

from __future__ import annotations

import json
import re
from typing import Any

from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, jsonrpc_message_adapter
from pydantic import ValidationError

from ctxkeep.server.jsonrpc_scan import CUT, MAX_INT_DIGITS, HugeInt, Scan

MAX_DEPTH = 100
FAST_BYTES = 64 * 1024
RequestId = int | str
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_COLUMN = re.compile(r"column (\d+)")
ONE_PER_LINE = "send one request per line (newline-delimited JSON, as MCP's stdio transport defines it)"


def usable_id(value: Any) -> RequestId | None:
    """`value` as a request id when it is one: a string (not cut; it may hold a lone surrogate escape, which is
    readable JSON and is written back escaped) or an integer (not a bool)."""
    if isinstance(value, (bool, HugeInt)):
        return None
    if isinstance(value, int | str) and value != CUT:
        return value
    return None


def answers(values: list[Any] | None, scan: Scan, code: int, message: str) -> list[JSONRPCError]:
    """One error per request with a readable id; one with id null for the rest (an id of the wrong type, a value that
    is not an object), or when nothing in the line has an id. A notification (an object without id) adds none."""
    messages = values if values is not None else [{"id": scan.fallback_id()}]
    if len(messages) == 1 and isinstance(messages[0], list):
        messages = messages[0] or [None]  # a batch: its requests
    ids: list[RequestId] = []
    unreadable = False
    for item in messages:
        request_id = usable_id(item.get("id")) if isinstance(item, dict) else None
        if request_id is not None:
            ids.append(request_id)
        elif not isinstance(item, dict) or "id" in item:
            unreadable = True
    error = ErrorData(code=code, message=message)
    return [
        JSONRPCError(jsonrpc="2.0", id=request_id, error=error)
        for request_id in [*ids, *([None] if unreadable or not ids else [])]
    ]


def shape_problem(message: Any) -> str | None:
    """What is wrong with the top level of one JSON-RPC message (None: nothing)."""
    if not isinstance(message, dict):
        return 'a JSON-RPC message is an object: {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}'
    if message.get("jsonrpc") != "2.0":
        return 'jsonrpc must be the string "2.0"; add "jsonrpc": "2.0" to the request'
    if "method" not in message:
        if ("result" in message or "error" in message) and "id" in message:
            return None  # a response to a request of ours: the SDK's to match
        return 'a request needs a method (and an id): {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}'
    if "id" in message and (isinstance(message["id"], bool) or not isinstance(message["id"], int | str)):
        return (
            f"id must be a string or an integer of at most {MAX_INT_DIGITS:,} digits (not a float, bool, null, object or "
            "list); leave it out only for a notification"
        )
    if not isinstance(message["method"], str):
        return 'method must be a string, such as "tools/call"'
    if message.get("params") is not None and not isinstance(message["params"], dict):
        return 'params must be an object, such as {"name": "checkpoint_list", "arguments": {}}'
    return None


def _surrogate_near(line: bytes, detail: str) -> str | None:
    """The surrogate escape (\\uD800-\\uDFFF) nearest the column the parser names, if there is one."""
    column = _COLUMN.search(detail)
    at = int(column.group(1)) if column else 0
    found = min(_SURROGATE.finditer(line), key=lambda match: abs(match.end() - at), default=None)
    return found.group().decode() if found else None


def _parse_failure(line: bytes, error: ValidationError) -> tuple[int, str]:
    """The code and message for a line the SDK's parser refused."""
    first = error.errors()[0]
    if first["type"] != "json_invalid":
        where = ".".join(str(part) for part in first["loc"]) or "message"
        return INVALID_REQUEST, f"not a valid JSON-RPC message: {where}: {first['msg']}"
    detail = str(first["msg"]).removeprefix("Invalid JSON: ")
    escape = _surrogate_near(line, detail) if "surrogate" in detail or "hex escape" in detail else None
    if escape:
        return PARSE_ERROR, (
            f"the request holds a lone surrogate escape ({escape}), which is not Unicode text ({detail}); "
            "send the character itself, or a complete surrogate pair"
        )
    if detail.startswith("number out of range"):
        return INVALID_REQUEST, (
            f"a number in the request is out of range ({detail}): integers may have at most "
            f"{MAX_INT_DIGITS:,} digits; send longer numbers as strings"
        )
    return PARSE_ERROR, f"the request is not valid JSON: {detail}"


def check(line: bytes) -> list[JSONRPCError]:
    """The error answers for one complete line (without its newline); empty when the SDK may have it as it is."""
    if _plainly_valid(line):
        return []
    scan = Scan()
    scan.feed(line)
    return _diagnose(line, scan)


def _plainly_valid(line: bytes) -> bool:
    """The common case, checked without a scan: a small line with too few brackets to nest too deep, that parses to
    one message of the right shape, which the SDK's parser accepts."""
    if len(line) > FAST_BYTES or line.count(b"{") + line.count(b"[") > MAX_DEPTH:
        return False
    try:
        message = json.loads(line)
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except (ValueError, ValidationError):  # not JSON, not UTF-8, an integer too long: diagnosed by the scan
        return False
    return shape_problem(message) is None


def _diagnose(line: bytes, scan: Scan) -> list[JSONRPCError]:
    values = scan.values()
    if scan.max_depth > MAX_DEPTH:
        return answers(
            values,
            scan,
            INVALID_REQUEST,
            f"the request nests {scan.max_depth:,} levels deep; at most "
            f"{MAX_DEPTH} levels are accepted: flatten the arguments, or send deep data as a JSON string",
        )
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return answers(
            values,
            scan,
            PARSE_ERROR,
            f"the request is not UTF-8 (byte {line[exc.start]:#04x} at offset {exc.start:,}); send UTF-8 text",
        )
    if values is None:
        if scan.overflow:
            return answers(
                None,
                scan,
                INVALID_REQUEST,
                "the request's top level (everything outside params) is over 64 KiB; put large values inside params",
            )
        try:
            jsonrpc_message_adapter.validate_json(line, by_name=False)
        except ValidationError as exc:
            return answers(None, scan, *_parse_failure(line, exc))
        return answers(None, scan, PARSE_ERROR, "the request is not valid JSON; " + ONE_PER_LINE)
    if len(values) != 1:
        return answers([values], scan, INVALID_REQUEST, f"the line holds {len(values)} JSON values; {ONE_PER_LINE}")
    if isinstance(values[0], list):
        return answers(
            values, scan, INVALID_REQUEST, f"batches (a JSON array of requests) are not supported; {ONE_PER_LINE}"
        )
    problem = shape_problem(values[0])
    if problem:
        return answers(values, scan, INVALID_REQUEST, problem)
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as exc:
        return answers(values, scan, *_parse_failure(line, exc))
    return []


def too_large_message(size: int, limit: int) -> str:
    return (
        f"request of {size:,} bytes is over the {limit:,}-byte limit (CTXKEEP_MAX_REQUEST_BYTES); nothing was stored. "
        "Send large content in parts: several evidence_put calls, or a batch of at most 64 MiB"
    )


def oversize(scan: Scan, size: int, limit: int) -> list[JSONRPCError]:
    """The answers to a request over the size limit, found from its scan (the request itself was not kept)."""
    values = scan.values()
    if values is not None and len(values) > 1:
        values = [values]
    return answers(values, scan, INVALID_REQUEST, too_large_message(size, limit))
