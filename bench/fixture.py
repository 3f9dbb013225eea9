"""The shared fixture builder: real text from ../shared/data, cut into evidence items of a given size.

Sources: LoCoMo dialogue turns, the tool outputs and messages of the SWE-bench agent runs, and
the tool results of the Claude Code transcripts. Items are consecutive runs of that text,
repeated with variations (a different starting point and an item number), never random letters.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

from bench.common import SHARED_DATA


def _locomo() -> Iterator[str]:
    for sample in json.loads((SHARED_DATA / "locomo" / "locomo10_dev.json").read_text()):
        conversation = sample["conversation"]
        for key in sorted(k for k in conversation if k.startswith("session_") and not k.endswith("date_time")):
            for turn in conversation[key]:
                yield f"{turn['speaker']}: {turn['text']}"


def _swe() -> Iterator[str]:
    for path in sorted((SHARED_DATA / "swe-trajectories").glob("*.traj.json")):
        for message in json.loads(path.read_text())["messages"]:
            if isinstance(message["content"], str):
                yield message["content"]


def _tool_result_texts(block: Any) -> Iterator[str]:
    content = block.get("content")
    if isinstance(content, str):
        yield content
    elif isinstance(content, list):
        yield from (part["text"] for part in content if isinstance(part, dict) and part.get("type") == "text")


def _claude_code() -> Iterator[str]:
    for path in sorted((SHARED_DATA / "claude-code-transcripts").glob("*.jsonl")):
        for line in path.read_text().splitlines():
            record = json.loads(line)
            content = record.get("message", {}).get("content") if isinstance(record.get("message"), dict) else None
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    yield from _tool_result_texts(block)


@functools.lru_cache(maxsize=1)
def corpus() -> str:
    """All the real text, concatenated; raises FileNotFoundError when ../shared/data is absent."""
    if not SHARED_DATA.is_dir():
        raise FileNotFoundError(f"{SHARED_DATA} is absent: the benchmarks measure on real data only")
    parts = [*_locomo(), *_swe(), *_claude_code()]
    return "\n".join(part for part in parts if part.strip())


def items(count: int, size: int, seed: int = 0) -> list[str]:
    """`count` texts of about `size` characters, each a different window of the real corpus."""
    text = corpus()
    step = 7919  # a prime stride, so windows start at many different places
    out = []
    for i in range(count):
        start = (seed * 104729 + i * step) % max(1, len(text) - size)
        out.append(f"[item {seed}-{i}]\n" + text[start : start + size])
    return out
