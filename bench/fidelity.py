"""Compaction fidelity: what reaches the model after a real Claude Code compaction, measured against hand-made lists.

For each of the 9 compactions in the six shared transcripts that have one (`bench/fidelity_items.json`, written
before anything was tuned), the hooks run as Claude Code runs them, in new processes: `pre-compact` on the transcript
cut at the boundary (its worker finishes), then `session-start` with source `compact` on the transcript that now ends
with Claude Code's summary, and `session-start` with source `resume` with no summary visible (ctxkeep alone). Items
carried, in the same run: Claude Code's summary alone (the baseline), the summary plus ctxkeep's repair block (a client that shows its summary
at session start), ctxkeep alone, and the summary plus the records' view (Claude Code 2.1.332, which writes its summary
only after SessionStart(compact): the view is injected then, and PostCompact adds only unverified claims); sizes
measured on the characters printed.

The five blind sets (`bench/blind`, `bench/blind2` … `bench/blind5`: public sessions from other repositories, items written by
reviewers who never read the code, each committed before it was first scored) run the same way on their own
transcripts.

Held out (`bench/fidelity_heldout.json`, 8 cut points with no compaction, written blind to the code): what
`session-start` (resume) injects after `pre-compact` on the transcript cut there, against the baseline of the same
number of characters of the conversation's most recent text (what keeping the tail of the history would keep).
"""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import SHARED_DATA
from ctxkeep.clients.claude_code.transcript import read_transcript
from ctxkeep.project import transcript_slug

ITEMS = Path(__file__).resolve().parent / "fidelity_items.json"
HELD_OUT = Path(__file__).resolve().parent / "fidelity_heldout.json"
# written blind to the code, each committed before it was first scored: (folder, raw key, what it is)
BLIND_SETS = (
    ("blind", "blind", "blind set, 8 public sessions (bench/blind)"),
    ("blind2", "blind_2", "second blind set, 6 public sessions (bench/blind2)"),  # other repositories (2026-12-02)
    ("blind3", "blind_3", "third blind set, 6 public sessions (bench/blind3)"),  # five more repositories (2026-12-02)
    ("blind4", "blind_4", "fourth blind set, 3 public sessions (bench/blind4)"),  # two more (2026-12-02)
    ("blind5", "blind_5", "fifth blind set, 4 public sessions (bench/blind5)"),  # two more (2026-12-02, evening)
)
BENCH = Path(__file__).resolve().parent
BASE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def carried(item: dict[str, Any], text: str) -> bool:
    hits = [re.search(p, text, re.IGNORECASE | re.DOTALL) is not None for p in item["match"]["patterns"]]
    return all(hits) if item["match"]["mode"] == "all" else any(hits)


class _Session:
    def __init__(self, root: Path) -> None:
        self.project = root / "project"
        self.project.mkdir()
        config = root / "claude"
        self.transcript = config / "projects" / transcript_slug(str(self.project.resolve())) / "s.jsonl"
        self.transcript.parent.mkdir(parents=True)
        self.env = {
            **BASE_ENV,
            "HOME": str(root),
            "CLAUDE_CONFIG_DIR": str(config),
            "CTXKEEP_DB": str(root / "ctxkeep.db"),
            "CTXKEEP_PROJECT": str(self.project),
            "CTXKEEP_WORKER_WAIT_S": "120",
        }

    def hook(self, name: str, **fields: Any) -> str:
        data = {"session_id": "s", "transcript_path": str(self.transcript), "cwd": str(self.project), **fields}
        done = subprocess.run(
            [sys.executable, "-m", "ctxkeep", "hook", name],
            input=json.dumps(data).encode(),
            capture_output=True,
            env=self.env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout.decode("ascii").strip()


def _context(printed: str) -> str:
    return str(json.loads(printed)["hookSpecificOutput"]["additionalContext"]) if printed else ""


def transcript_lines(path: Path) -> list[str]:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8").splitlines()


def false_lines(compaction: dict[str, Any], *texts: str) -> list[str]:
    """The lines of ctxkeep's texts that assert what the set says is false at the cut (`false_at_cut`)."""
    patterns = [re.compile(p, re.IGNORECASE) for f in compaction.get("false_at_cut", []) for p in f["patterns"]]
    return [line for text in texts for line in text.splitlines() if any(p.search(line) for p in patterns)]


def is_quoted(line: str) -> bool:
    """A line that quotes someone's words under their source (a prompt, the agent's message, a spec: `> …`), as
    opposed to a line ctxkeep states itself (`- The latest test run failed …`)."""
    return line.lstrip().startswith(">")


def _one(compaction: dict[str, Any], root: Path = SHARED_DATA) -> dict[str, Any]:
    lines = transcript_lines(root / compaction["file"])
    summary = read_transcript(lines[: compaction["summary_line"]]).summaries[-1]
    with tempfile.TemporaryDirectory() as tmp:
        session = _Session(Path(tmp))
        session.transcript.write_text("\n".join(lines[: compaction["boundary_line"] - 1]) + "\n", encoding="utf-8")
        session.hook("pre-compact", hook_event_name="PreCompact", trigger="auto")
        alone_printed = session.hook("session-start", hook_event_name="SessionStart", source="resume")
        session.transcript.write_text("\n".join(lines[: compaction["summary_line"]]) + "\n", encoding="utf-8")
        repair_printed = session.hook("session-start", hook_event_name="SessionStart", source="compact")
    repair, alone, items = _context(repair_printed), _context(alone_printed), compaction["items"]
    wrong = false_lines(compaction, alone, repair)
    return {
        "file": compaction["file"],
        "boundary": compaction["boundary_line"],
        "items": len(items),
        "summary": sum(carried(i, summary) for i in items),
        "both": sum(carried(i, summary + "\n" + repair) for i in items),
        "alone": sum(carried(i, alone) for i in items),
        "view_after": sum(carried(i, summary + "\n" + alone) for i in items),
        "repair_chars": len(repair_printed),
        "alone_chars": len(alone_printed),
        "lost_by_both": [i["id"] for i in items if not carried(i, summary + "\n" + repair)],
        "lost_alone": [i["id"] for i in items if not carried(i, alone)],
        "false_lines": wrong,
    }


def _conversation_text(lines: list[str]) -> str:
    """The conversation as plain text, in order: prompts, the agent's words, tool calls and their results."""
    parts: list[str] = []
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        message = record.get("message") if isinstance(record, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
            if isinstance(block, dict):
                value = block.get("text") or block.get("input") or block.get("content") or ""
                parts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
    return "\n".join(parts)


def _held_out(cut: dict[str, Any]) -> dict[str, Any]:
    lines = (SHARED_DATA / cut["file"]).read_text(encoding="utf-8").splitlines()[: cut["boundary_line"] - 1]
    with tempfile.TemporaryDirectory() as tmp:
        session = _Session(Path(tmp))
        session.transcript.write_text("\n".join(lines) + "\n", encoding="utf-8")
        session.hook("pre-compact", hook_event_name="PreCompact", trigger="auto")
        printed = session.hook("session-start", hook_event_name="SessionStart", source="resume")
    view, items = _context(printed), cut["items"]
    tail = _conversation_text(lines)[-len(view) :] if view else ""
    return {
        "file": cut["file"],
        "cut": cut["boundary_line"],
        "items": len(items),
        "alone": sum(carried(i, view) for i in items),
        "tail": sum(carried(i, tail) for i in items),
        "chars": len(printed),
        "lost": [i["id"] for i in items if not carried(i, view)],
    }


def _held_out_rows(results: list[dict[str, Any]]) -> tuple[list[dict[str, str]], list[str], dict[str, float]]:
    n = sum(r["items"] for r in results)
    share = {k: sum(r[k] for r in results) / n for k in ("alone", "tail")}
    rows = [
        {
            "metric": f"held out: ctxkeep alone at {len(results)} cut points with no compaction ({n} items written blind)",
            "value": f"{share['alone']:.3f}",
            "baseline": f"{share['tail']:.3f} the conversation's last text of the same size",
            "target": "report",
        },
        {
            "metric": "held out: records' view, printed characters: median (max)",
            "value": _median_max([r["chars"] for r in results]),
            "baseline": "",
            "target": "≤ 9,000",
        },
    ]
    notes = [
        f"held out {r['file'].split('/')[-1][:24]} @{r['cut']}: alone {r['alone']}/{r['items']}, tail {r['tail']}; "
        f"lost: {', '.join(r['lost']) or 'none'}"
        for r in results
    ]
    return rows, notes, share


def _set_rows(name: str, results: list[dict[str, Any]]) -> tuple[list[dict[str, str]], dict[str, float]]:
    n = sum(r["items"] for r in results)
    share = {k: sum(r[k] for r in results) / n for k in ("summary", "both", "alone", "view_after")}
    wrong = sum(len(r["false_lines"]) for r in results)
    quoted = sum(is_quoted(line) for r in results for line in r["false_lines"])
    rows = [
        {
            "metric": f"{name} ({n} items, {len(results)} compactions): summary + ctxkeep's repair / + the records' view "
            "(Claude Code 2.1.332) / ctxkeep alone",
            "value": f"{share['both']:.3f} / {share['view_after']:.3f} / {share['alone']:.3f}",
            "baseline": f"{share['summary']:.3f} Claude Code's summary alone",
            "target": "≥ 0.92 / report / ≥ 0.70",
        },
        {
            "metric": f"{name}: lines ctxkeep showed that are false at the cut (view and repair): stated by ctxkeep / "
            "quoted words a later turn contradicted",
            "value": f"{wrong - quoted} / {quoted}",
            "baseline": "",
            "target": "0 / report",
        },
        {
            "metric": f"{name}: repair block / records' view, printed characters, median (max)",
            "value": f"{_median_max([r['repair_chars'] for r in results])} / {_median_max([r['alone_chars'] for r in results])}",
            "baseline": "",
            "target": "≤ 4,000 / ≤ 9,000",
        },
    ]
    return rows, {**share, "false_lines": wrong, "false_stated": wrong - quoted}


def _notes(name: str, results: list[dict[str, Any]]) -> list[str]:
    return [
        f"{name} {r['file'].split('/')[-1][:24]} @{r['boundary']}: summary {r['summary']}/{r['items']}, + repair "
        f"{r['both']}, + view {r['view_after']}, alone {r['alone']}; lost by both: {', '.join(r['lost_by_both']) or 'none'}"
        + (f"; false: {' | '.join(line[:100] for line in r['false_lines'])}" if r["false_lines"] else "")
        for r in results
    ]


def run(quick: bool) -> dict[str, Any]:
    compactions = json.loads(ITEMS.read_text())["compactions"]
    if not (SHARED_DATA / compactions[0]["file"]).exists():
        return {"title": "Compaction fidelity", "rows": [], "notes": ["../shared/data is absent: not run"]}
    dev = [_one(c) for c in compactions]
    dev_rows, dev_share = _set_rows("dev set, 6 shared transcripts", dev)
    rows, notes, raw, results = list(dev_rows), _notes("dev", dev), {"dev": dev_share, "compactions": dev}, list(dev)
    for folder, key, name in BLIND_SETS:
        scored = [
            _one(c, BENCH / folder) for c in json.loads((BENCH / folder / "items.json").read_text())["compactions"]
        ]
        set_rows, share = _set_rows(name, scored)
        rows += set_rows
        notes += _notes(folder, scored)
        raw |= {key: share, f"{key}_compactions": scored}
        results += scored
    held_out = [_held_out(c) for c in json.loads(HELD_OUT.read_text())["compactions"]]
    held_rows, held_notes, held_share = _held_out_rows(held_out)
    return {
        "title": "Compaction fidelity (real transcripts, hooks as Claude Code runs them)",
        "rows": rows + held_rows,
        "notes": notes + held_notes,
        "raw": {**raw, "held_out": held_out, "held_out_share": held_share},
        "checks": {
            "repair_within_4000": max(r["repair_chars"] for r in results) <= 4_000,
            "injection_within_9000": max(r["alone_chars"] for r in results) <= 9_000,
        },
    }


def _median_max(values: list[int]) -> str:
    ordered = sorted(values)
    return f"{ordered[len(ordered) // 2]:,} ({ordered[-1]:,})"
