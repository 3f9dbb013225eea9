"""Real inputs of the hook benchmarks (`bench/hooks.py`, `bench/client_hooks.py`), read from ../shared/data at run time.

- The session: the 3.2 MB shared transcript `4d5611e5…` up to its compaction (its first 753 lines, 2.1 MB: what
  Claude Code compacted), then the compaction itself as Claude Code wrote it: the `compact_boundary` record and its
  15.7 KB summary (`COMPACTION`), which the compact session start checks.
- Tool outputs: the Bash output of that session nearest 2 KB (a real pass-through: under the 4 KB shell limit), and
  the largest Bash output of all the shared sessions (a paginated `gh api …` of PR comments: 135 KB of JSON on one
  line), its first 100,000 characters (an offload; an output with lines would be cut at a line end). Both with the command that printed them and Claude Code's own
  `toolUseResult` fields.
- The store beside the session (`build_store`): 10,000 evidence items of ~2 KB of real text (`bench.fixture`) in the
  project, and a task the agent saved 100 versions of (`bench.checkpoint`'s states: pending steps, facts, an
  approval), through the Python API, as an agent that used the server for a while leaves them.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from bench.common import SHARED_DATA

TRANSCRIPT = SHARED_DATA / "claude-code-transcripts" / "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"
TRANSCRIPTS = sorted(
    [*SHARED_DATA.glob("claude-code-transcripts/*.jsonl"), *SHARED_DATA.glob("claude-code-transcripts-more/*.jsonl")]
)
SMALL_BYTES = 2_048
BIG_BYTES = 100_000
EVIDENCE_ITEMS = 10_000
TASK_VERSIONS = 100
TASK_ID = "bench-spotter-dov"


def available() -> bool:
    return TRANSCRIPT.is_file()


@functools.lru_cache(maxsize=1)
def _lines() -> list[str]:
    return TRANSCRIPT.read_text(encoding="utf-8").splitlines(keepends=True)


def _boundary() -> int:
    return next(i for i, line in enumerate(_lines()) if '"compact_boundary"' in line)


def before_compaction() -> str:
    """The transcript Claude Code compacted: every line before its first `compact_boundary`."""
    return "".join(_lines()[: _boundary()])


def compaction() -> str:
    """The compaction as Claude Code wrote it: the boundary record and the summary record after it."""
    start = _boundary()
    return "".join(_lines()[start : start + 2])


def summary_chars() -> int:
    record = json.loads(_lines()[_boundary() + 1])
    content = record["message"]["content"]
    return len(content if isinstance(content, str) else json.dumps(content))


def _bash_outputs(path: Path) -> list[tuple[str, dict[str, Any]]]:
    """(command, toolUseResult) of every Bash call of a transcript whose result has a stdout."""
    commands: dict[str, str] = {}
    out: list[tuple[str, dict[str, Any]]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use" and block.get("name") == "Bash":
                commands[block["id"]] = str(block.get("input", {}).get("command", ""))
            result = record.get("toolUseResult")
            answered = block.get("type") == "tool_result" and block.get("tool_use_id") in commands
            if answered and isinstance(result, dict) and isinstance(result.get("stdout"), str):
                out.append((commands[block["tool_use_id"]], result))
    return out


def _response(result: dict[str, Any], stdout: str) -> dict[str, Any]:
    return {
        "stdout": stdout,
        "stderr": str(result.get("stderr") or ""),
        "interrupted": bool(result.get("interrupted")),
        "isImage": bool(result.get("isImage")),
    }


@functools.lru_cache(maxsize=1)
def outputs() -> dict[str, tuple[str, dict[str, Any]]]:
    """ "2 KB" and "100 KB": (command, Claude Code's tool_response) of the two real outputs."""
    own = _bash_outputs(TRANSCRIPT)
    command, result = min(own, key=lambda found: (abs(len(found[1]["stdout"].encode()) - SMALL_BYTES), found[0]))
    small = (command, _response(result, result["stdout"]))
    every = [found for path in TRANSCRIPTS for found in _bash_outputs(path)]
    command, result = max(every, key=lambda found: (len(found[1]["stdout"]), found[0]))
    text = result["stdout"]
    end = text.rfind("\n", 0, BIG_BYTES) + 1 or BIG_BYTES  # one line of JSON has no line end to cut at
    cut = text[:end]
    return {"2 KB": small, "100 KB": (command, _response(result, cut))}


def session_events(limit: int) -> tuple[list[str], list[tuple[str, dict[str, Any]]]]:
    """The prompts people typed and the Bash calls (command, Claude Code's tool_response) of all the shared sessions,
    in order, at most `limit` of each: a session of real size and content for the other clients' hooks."""
    prompts: list[str] = []
    calls: list[tuple[str, dict[str, Any]]] = []
    for path in TRANSCRIPTS:
        for line in path.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            message = record.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            typed = record.get("type") == "user" and isinstance(content, str) and not record.get("isMeta")
            if typed and not content.startswith(("<", "[Request interrupted", "This session is being continued")):
                prompts.append(content)
        calls += [(command, _response(result, result["stdout"])) for command, result in _bash_outputs(path)]
    return prompts[:limit], calls[:limit]


def describe() -> str:
    """What the outputs are, for the notes of a benchmark."""
    (small, small_out), (big, big_out) = outputs()["2 KB"], outputs()["100 KB"]
    return (
        f"tool outputs: `{small[:60]}` ({len(small_out['stdout'].encode()):,} bytes, from the session) and "
        f"`{big[:60]}…` ({len(big_out['stdout'].encode()):,} bytes: the first 100,000 characters of the largest "
        "Bash output of the shared sessions, one line of JSON)"
    )


def build_store(db: Path, project: str) -> None:
    """The store an agent that used the server leaves: EVIDENCE_ITEMS evidence items in `project` and the task
    TASK_ID saved TASK_VERSIONS times."""
    import anyio

    from bench.checkpoint import _states
    from bench.fixture import items
    from ctxkeep.models import CheckpointSaveRequest, TaskState
    from ctxkeep.models.evidence import EvidenceItem
    from ctxkeep.storage import open_store
    from ctxkeep.tools.checkpoint.versions import checkpoint_save
    from ctxkeep.tools.evidence.records import evidence_put
    from ctxkeep.tools.scope import Scope

    async def fill() -> None:
        store = await open_store(db)
        scope = Scope(store=store, project=project)
        try:
            for start in range(0, EVIDENCE_ITEMS, 500):
                texts = items(min(500, EVIDENCE_ITEMS - start), 2_000, seed=5_000 + start)
                await evidence_put(scope, [EvidenceItem(content=t, source="Bash", kind="tool_result") for t in texts])
            for version, state in enumerate(_states(TASK_VERSIONS), start=1):
                request = CheckpointSaveRequest(
                    task_id=TASK_ID, state=TaskState.model_validate(state), expected_version=version - 1
                )
                await checkpoint_save(scope, request)
        finally:
            await store.close()

    anyio.run(fill)
