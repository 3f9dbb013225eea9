"""The live hooks replayed over the six long shared Claude Code sessions: shaping, lossless offload, the gate.

Every tool result of the sessions (`toolUseResult` as Claude Code passed it to PostToolUse) goes through the
PostToolUse hook's own code path (`clients.claude_code.hooks.post_tool_use`, in-process, on a real SQLite file).
- Shaping: tool-output tokens (cl100k) the model would no longer see, among the tools shaped by default (everything
  but Read) and over all tools with Read opt-in off and on; the baseline is the output as it was sent.
- Lossless: the offloaded outputs are taken into the evidence store as the pre-compact worker does, then fetched
  with evidence_get; each must equal the redacted original byte for byte.
- Needed again: a shaped output whose command was run again later in the session, or whose file was read again.
- The gate: at each turn's end (the next prompt, or the session's end) the Stop hook's decision; a block counts as a
  false alarm when the agent had in fact run something after its last write (a command other than a read-only look:
  git status/diff/log, ls, cat, grep, find, …), which the gate does not count as verification.
"""

from __future__ import annotations

import json
import re
import tempfile
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

import anyio

from bench.common import SHARED_DATA
from ctxkeep.clients.claude_code import hooks
from ctxkeep.clients.claude_code.tool_output import output_text
from ctxkeep.clients.claude_code.transcript import prompt_text
from ctxkeep.clients.core import live
from ctxkeep.clients.core.hook_config import hook_config
from ctxkeep.clients.core.hook_io import Where
from ctxkeep.clients.core.shaping import family_of
from ctxkeep.models.evidence import EvidenceGetRequest
from ctxkeep.storage import open_store
from ctxkeep.storage.hook_store import open_hot_session
from ctxkeep.tokens import count_tokens
from ctxkeep.tools.evidence import evidence_get, take_offloads
from ctxkeep.tools.redaction.redact import redact_secrets
from ctxkeep.tools.scope import Scope

SESSIONS = [
    "claude-code-transcripts/258c7280-ae70-4798-800f-63464d01a85d.jsonl",
    "claude-code-transcripts/4d5611e5-241a-462a-8d15-5122611a9569.jsonl",
    "claude-code-transcripts-more/entireio-cli-1284c080.jsonl",
    "claude-code-transcripts-more/entireio-cli-cd95addd.jsonl",
    "claude-code-transcripts-more/local-web-services-565d8d2e.jsonl",
    "claude-code-transcripts-more/local-web-services-d51c1722.jsonl",
]
_LOOK_ONLY = re.compile(
    r"^\s*(?:git (?:status|diff|log|show|branch)|ls|cat|head|tail|grep|rg|find|wc|pwd|echo|which|bd (?:show|list|ready))\b"
)


def _events(path: Path) -> list[tuple[str, Any]]:
    """("prompt", text) and ("tool", (name, input, response, use_id)) in transcript order."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    out: list[tuple[str, Any]] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        message = record.get("message") if isinstance(record, dict) and not record.get("isSidechain") else None
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if (
            record.get("type") == "user"
            and not record.get("isMeta")
            and not record.get("isCompactSummary")
            and prompt_text(content)
        ):
            out.append(("prompt", prompt_text(content)))
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_use":
                calls[str(block.get("id"))] = (
                    str(block.get("name")),
                    block.get("input") if isinstance(block.get("input"), dict) else {},
                )
            elif (
                isinstance(block, dict)
                and block.get("type") == "tool_result"
                and str(block.get("tool_use_id")) in calls
            ):
                name, data = calls.pop(str(block["tool_use_id"]))
                given = block.get("content")
                response = record.get("toolUseResult") if record.get("toolUseResult") is not None else given
                failed = bool(block.get("is_error"))
                out.append(("tool", (name, data, response, str(block["tool_use_id"]), failed, given)))
    return out


def _seen(given: Any) -> str:
    """The tool result as the model saw it (a string, or the text parts of a list)."""
    if isinstance(given, str):
        return given
    return "\n".join(str(b.get("text", "")) for b in given if isinstance(b, dict)) if isinstance(given, list) else ""


class _Replay:
    def __init__(self, root: Path, read: bool) -> None:
        self.env = {
            "CTXKEEP_DB": str(root / "ctxkeep.db"),
            "CTXKEEP_PROJECT": str(root),
            "HOME": str(root),
            "CTXKEEP_SHAPE_READ": "1" if read else "",
        }
        self.w = Where(hook_config(self.env), str(root), "s", time.perf_counter())
        self.conn = open_hot_session(self.w.db, self.w.project, self.w.session_id)
        self.tokens = {"shown": 0, "kept": 0, "over_shown": 0, "over_kept": 0}
        self.by_tool: dict[str, list[int]] = {}
        self.shaped: list[tuple[str, str, str]] = []  # (tool, what it ran or read, ref)
        self.gate = {"turns_with_writes": 0, "blocked": 0, "false_alarms": 0}
        self.after_write: list[str] = []
        self.wrote = False

    def tool(self, name: str, data: dict[str, Any], response: Any, use_id: str, failed: bool, given: Any) -> None:
        stdin = {
            "session_id": "s",
            "cwd": str(self.w.project),
            "tool_name": name,
            "tool_input": data,
            "tool_use_id": use_id,
            "tool_response" if not failed else "error": response if not failed else _seen(given),
        }
        handler = hooks.post_tool_use_failure if failed else hooks.post_tool_use
        output, _ = handler(self.conn, self.w, stdin)
        before = count_tokens(_seen(given) or output_text(name, response, []))
        printed = json.dumps(output) if output is not None else ""
        after = count_tokens(_view(printed)) if printed else before
        self.tokens["shown"] += before
        self.tokens["kept"] += after
        self.by_tool.setdefault(name, [0, 0])[0] += before
        self.by_tool[name][1] += after
        if printed:
            self.tokens["over_shown"] += before
            self.tokens["over_kept"] += after
            self.shaped.append(
                (
                    name,
                    str(data.get("command") or data.get("file_path") or ""),
                    re.findall(r"ev_[0-9a-f]{24}", printed)[0],
                )
            )
        if name in ("Edit", "Write", "MultiEdit", "NotebookEdit"):
            self.after_write, self.wrote = [], True
        elif name == "Bash":
            self.after_write.append(str(data.get("command") or ""))

    def turn_end(self) -> None:
        reason = live.gate_reason(self.conn, self.w, stop_active=False)
        self.gate["turns_with_writes"] += int(self.wrote)
        if reason:
            self.gate["blocked"] += 1
            if any(not _LOOK_ONLY.match(command) for command in self.after_write):
                self.gate["false_alarms"] += 1
        self.after_write, self.wrote = [], False


def _view(printed: str) -> str:
    shaped = json.loads(printed)["hookSpecificOutput"]
    value = shaped.get("updatedToolOutput")
    if isinstance(value, dict):
        return str(value.get("stdout") or value.get("content") or value.get("result") or json.dumps(value))
    return str(value)


def _needed_again(events: list[tuple[str, Any]], shaped: list[tuple[str, str, str]]) -> int:
    """Shaped outputs whose command was run again later, or whose file was read again."""
    later = [(e[1][0], str(e[1][1].get("command") or e[1][1].get("file_path") or "")) for e in events if e[0] == "tool"]
    count = 0
    for tool, target, _ in shaped:
        seen = [i for i, (t, x) in enumerate(later) if (t, x) == (tool, target)]
        count += int(len(seen) > 1 and bool(target))
    return count


async def _whole(scope: Scope, ref: str) -> str:
    """The whole stored content, chunk by chunk (each read within the 25,000-token limit)."""
    parts, chunk = [], 0
    while True:
        got = await evidence_get(scope, EvidenceGetRequest(ref=ref, mode="chunk", chunk=chunk, max_tokens=25_000))
        parts.append(got.content)
        if not got.next:
            return "".join(parts)
        chunk += 1


async def _lossless(root: Path, originals: dict[str, str]) -> tuple[int, int]:
    store = await open_store(root / "ctxkeep.db")
    try:
        scope = Scope(store=store, project=str(root))
        await take_offloads(scope)
        same = 0
        for ref, original in originals.items():
            same += int(await _whole(scope, ref) == original)
        return same, len(originals)
    finally:
        await store.close()


def _session(path: Path, read: bool) -> dict[str, Any]:
    events = _events(path)
    with tempfile.TemporaryDirectory() as tmp:
        replay = _Replay(Path(tmp), read)
        originals: dict[str, str] = {}
        with closing(replay.conn):
            for kind, value in events:
                if kind == "prompt":
                    replay.turn_end()
                    live.record_prompt(replay.conn, replay.w, value)
                else:
                    replay.tool(*value)
                    if replay.shaped and replay.shaped[-1][2] not in originals and value[3]:
                        name, response = value[0], value[2]
                        originals[replay.shaped[-1][2]] = redact_secrets(output_text(name, response, []))[0]
            replay.turn_end()
        same, total = anyio.run(_lossless, Path(tmp), originals)
    return {
        "tokens": replay.tokens,
        "by_tool": replay.by_tool,
        "shaped": len(replay.shaped),
        "same": same,
        "offloaded": total,
        "needed_again": _needed_again(events, replay.shaped),
        "gate": replay.gate,
    }


def run(quick: bool) -> dict[str, Any]:
    paths = [SHARED_DATA / s for s in SESSIONS]
    if not all(p.exists() for p in paths):
        return {"title": "Live hooks", "rows": [], "notes": ["../shared/data is absent: not run"]}
    chosen = paths[:2] if quick else paths
    off = [_session(p, read=False) for p in chosen]
    on = [_session(p, read=True) for p in chosen]

    def saved(results: list[dict[str, Any]], chosen: Callable[[str], bool]) -> tuple[float, int]:
        shown = sum(v[0] for r in results for t, v in r["by_tool"].items() if chosen(t))
        kept = sum(v[1] for r in results for t, v in r["by_tool"].items() if chosen(t))
        return 1 - kept / max(shown, 1), shown

    default_share, default_tokens = saved(off, lambda tool: family_of(tool) not in (None, "read"))
    all_off, all_tokens = saved(off, lambda tool: True)
    all_on, _ = saved(on, lambda tool: True)
    read_tokens = sum(r["by_tool"].get("Read", [0])[0] for r in off)
    over = 1 - sum(r["tokens"]["over_kept"] for r in off) / max(sum(r["tokens"]["over_shown"] for r in off), 1)
    same, offloaded = sum(r["same"] for r in on), sum(r["offloaded"] for r in on)
    gate = {k: sum(r["gate"][k] for r in off) for k in ("turns_with_writes", "blocked", "false_alarms")}
    rows = [
        {
            "metric": f"tool-output tokens the model no longer sees, tools shaped by default (shell, grep, glob, web, other MCP "
            f"servers; {default_tokens:,} tokens, {len(chosen)} sessions)",
            "value": f"{default_share:.1%}",
            "baseline": "0% (every output sent as it is)",
            "target": "≥ 60%",
        },
        {
            "metric": "… among the outputs over their limit (the ones shaped)",
            "value": f"{over:.1%}",
            "baseline": "0%",
            "target": "report",
        },
        {
            "metric": f"… over all tools ({all_tokens:,} tokens; Read {read_tokens / max(all_tokens, 1):.0%} of them): Read opt-in off / on",
            "value": f"{all_off:.1%} / {all_on:.1%}",
            "baseline": "0%",
            "target": "report",
        },
        {
            "metric": "offloaded outputs returned byte-identical (after redaction), Read opt-in on",
            "value": f"{same} / {offloaded}",
            "baseline": "",
            "target": "100%",
        },
        {
            "metric": "shaped outputs the agent needed again later (same command rerun, same file re-read)",
            "value": f"{sum(r['needed_again'] for r in on)} of {sum(r['shaped'] for r in on)}",
            "baseline": "",
            "target": "report",
        },
        {
            "metric": "verification gate: turns that wrote files / blocked once / of those, the agent had run something after its last "
            "write (false alarms)",
            "value": f"{gate['turns_with_writes']} / {gate['blocked']} / {gate['false_alarms']}",
            "baseline": "",
            "target": "report",
        },
    ]
    return {
        "title": "Live hooks replayed over the shared sessions",
        "rows": rows,
        "notes": [
            f"{Path(s).name[:28]}: shaped {r['shaped']}, needed again {r['needed_again']}, gate blocked {r['gate']['blocked']} "
            f"(false alarms {r['gate']['false_alarms']})"
            for s, r in zip(chosen, on, strict=True)
        ],
        "raw": {"off": off, "on": on},
        "checks": {"default_share_at_least_0.60": default_share >= 0.60, "lossless": same == offloaded},
    }
