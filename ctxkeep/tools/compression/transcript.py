"""Claude Code transcripts: a JSONL file under an allowed root, read into Anthropic-shaped messages.

The format is internal to Claude Code and changes between versions, so reading is defensive:
records other than user and assistant messages (progress, snapshots, system notes), sidechain
and meta records, and lines that are not JSON objects (a partly written last line) are skipped
and counted, never a crash. Assistant content blocks written one record each under the same
`message.id` become one message; consecutive tool-result records become one user message.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxkeep.errors import InvalidInput, NotFound
from ctxkeep.project import transcript_roots

MAX_TRANSCRIPT_BYTES = 512 * 1024 * 1024


@dataclass
class Transcript:
    messages: list[dict[str, Any]]
    skipped: int
    records: int


def allowed_roots(env: Mapping[str, str], project: str, cwd: str | None = None) -> list[Path]:
    """Where transcripts may be read: this project's session folders under Claude Code's config folder, the project,
    and CTXKEEP_ALLOWED_ROOTS (`ctxkeep.project.transcript_roots`)."""
    return [Path(root) for root in transcript_roots(env, project, cwd)]


def resolve_transcript(path: str, roots: list[Path], base: str) -> Path:
    """The real path of `path` (relative to `base`, symlinks followed) under an allowed root; raises InvalidInput or NotFound."""
    try:
        real = Path(os.path.realpath(os.path.join(base, os.path.expanduser(path))))
        return _checked(path, real, roots)
    except (OSError, ValueError) as exc:
        raise InvalidInput(
            f"transcript_path {path[:200]!r} cannot be used ({exc}); send the path of a .jsonl file"
        ) from None


def _checked(path: str, real: Path, roots: list[Path]) -> Path:
    if not any(real == root or root in real.parents for root in roots):
        raise InvalidInput(
            f"transcript_path {path!r} resolves to {real}, outside the allowed roots ({', '.join(map(str, roots))}); "
            "send a transcript under one of them, or add its folder to CTXKEEP_ALLOWED_ROOTS"
        )
    if not real.is_file():
        raise NotFound(f"transcript_path {path!r} is not a file; send the path of a Claude Code .jsonl transcript")
    if real.stat().st_size > MAX_TRANSCRIPT_BYTES:
        raise InvalidInput(f"transcript {real} is over {MAX_TRANSCRIPT_BYTES:,} bytes; compress a shorter one")
    return real


def _record(line: str) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def _message_of(record: dict[str, Any]) -> dict[str, Any] | None:
    if record.get("type") not in ("user", "assistant") or record.get("isSidechain") or record.get("isMeta"):
        return None
    message = record.get("message")
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
        return None
    content = message.get("content")
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return None
    return {"role": message["role"], "content": [b for b in content if isinstance(b, dict)], "_id": message.get("id")}


def _only_results(message: dict[str, Any]) -> bool:
    return bool(message["content"]) and all(b.get("type") == "tool_result" for b in message["content"])


def _append(messages: list[dict[str, Any]], message: dict[str, Any]) -> None:
    last = messages[-1] if messages else None
    same_reply = (
        last and message["role"] == "assistant" == last["role"] and message["_id"] and message["_id"] == last["_id"]
    )
    more_results = last and message["role"] == "user" == last["role"] and _only_results(message) and _only_results(last)
    if last and (same_reply or more_results):
        last["content"] = last["content"] + message["content"]
    else:
        messages.append(message)


def read_transcript(path: Path) -> Transcript:
    """The transcript's conversation as Anthropic-shaped messages, with how many records were skipped."""
    try:
        return _read(path)
    except OSError as exc:
        raise InvalidInput(
            f"transcript {path} cannot be read ({exc.strerror or exc}); send a readable Claude Code .jsonl file"
        ) from None


def _read(path: Path) -> Transcript:
    with path.open(encoding="utf-8", errors="replace") as lines:
        return parse_transcript(lines, str(path))


def parse_transcript(lines: Iterable[str], name: str = "the transcript") -> Transcript:
    """A transcript's lines (a file's, or the text a client sent) as Anthropic-shaped messages; raises InvalidInput
    when no line is a JSON object (`name` says which transcript)."""
    messages: list[dict[str, Any]] = []
    skipped = records = objects = 0
    for line in lines:
        if not line.strip():
            continue
        records += 1
        record = _record(line)
        objects += record is not None
        message = _message_of(record) if record else None
        if message is None:
            skipped += 1
            continue
        _append(messages, message)
    if not objects:
        raise InvalidInput(
            f"{name} is not a JSONL transcript (no line is a JSON object); send a Claude Code .jsonl transcript"
        )
    return Transcript([{"role": m["role"], "content": m["content"]} for m in messages], skipped, records)
