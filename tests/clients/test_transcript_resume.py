"""Claude Code transcripts read in pieces: the pre-compact worker reads only the lines appended since its last ingest,
going on from the reader's saved state, and must arrive at the records one read of the whole file gives.

Real transcripts from ../shared/data (skipped, saying so, when they are absent), cut at random lines and at lines
where a tool call waits for its result; then the worker itself, run on a transcript that grows, against one ingest of
the whole file.
"""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from ctxkeep.storage.shown import SHOWN_KINDS
from ctxkeep.clients.claude_code.transcript import Transcript, last_compact_summary, read_transcript
from tests.claude_home import DATA, Claude

TRANSCRIPTS = sorted(
    [*DATA.glob("claude-code-transcripts/*.jsonl"), *DATA.glob("claude-code-transcripts-more/*.jsonl")]
)
pytestmark = pytest.mark.skipif(not TRANSCRIPTS, reason=f"the shared transcripts are absent ({DATA})")


def _by_key(records: list[Any]) -> dict[tuple[str, str], tuple[str, ...]]:
    """The latest record of each (kind, key), as the database keeps them."""
    return {(r.kind, r.key): tuple(r) for r in records}


def _in_pieces(lines: list[str], cuts: list[int]) -> tuple[list[Any], list[Transcript]]:
    """Every piece read from the state the one before left: the records each piece settles (its provisional ones are
    the next piece's to settle), then the last piece's records whole."""
    pieces, state, records = [], None, []
    bounds = [0, *cuts, len(lines)]
    for start, end in zip(bounds, bounds[1:], strict=False):
        piece = read_transcript(lines[start:end], state=state)
        pieces.append(piece)
        state = piece.state
    for piece in pieces[:-1]:
        records += [r for r in piece.records if not any(r is p for p in piece.provisional)]
    return records + pieces[-1].records, pieces


@pytest.mark.parametrize("path", TRANSCRIPTS, ids=lambda p: p.name[:24])
def test_a_transcript_read_in_pieces_gives_the_records_of_one_read(path: Path) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    whole = read_transcript(lines)
    rng = random.Random(path.name)
    for _ in range(3):
        cuts = sorted(rng.sample(range(1, len(lines)), min(6, len(lines) - 1)))
        records, pieces = _in_pieces(lines, cuts)
        assert _by_key(records) == _by_key(whole.records), cuts
        assert pieces[-1].bound_task == whole.bound_task
        assert pieces[-1].state == whole.state


def test_a_cut_while_tool_calls_wait_for_their_results_settles_them_in_the_next_piece() -> None:
    """The cuts that matter: a tool call written, its result not yet (a TaskCreate's id comes from its result)."""
    path = next(p for p in TRANSCRIPTS if "4d5611e5" in p.name)
    lines = path.read_text(encoding="utf-8").splitlines()
    waiting = _waiting(lines)
    assert len(waiting) > 20  # the real session has them
    whole = read_transcript(lines)
    for cut in waiting[:: max(1, len(waiting) // 25)]:
        records, _ = _in_pieces(lines, [cut])
        assert _by_key(records) == _by_key(whole.records), cut


def _waiting(lines: list[str]) -> list[int]:
    """The cuts after which a tool call waits for its result (read a line at a time, each from the last state)."""
    found, state = [], None
    for n, line in enumerate(lines[:-1], start=1):
        state = read_transcript([line], state=state).state
        if state["calls"]:
            found.append(n)
    return found


def test_the_last_summary_read_from_the_tail_is_the_one_the_reader_finds() -> None:
    for path in TRANSCRIPTS:
        summaries = read_transcript(path.read_text(encoding="utf-8").splitlines()).summaries
        assert last_compact_summary(str(path)) == (summaries[-1] if summaries else None), path.name


def _records(claude: Claude) -> list[tuple[Any, ...]]:
    """The session's records (not the hooks' bookkeeping, nor the log of what was shown)."""
    with sqlite3.connect(claude.db) as db:
        rows = db.execute("SELECT kind, key, text, at, status, source, ref FROM session_records").fetchall()
    return sorted(r for r in rows if r[0] != "hook" and r[0] not in SHOWN_KINDS)


def _ingest(claude: Claude) -> str:
    claude.hook("pre-compact", claude.base("PreCompact", trigger="auto"))
    claude.hook("session-start", claude.base("SessionStart", source="resume"))  # waits for the worker
    with sqlite3.connect(claude.db) as db:
        (note,) = db.execute("SELECT worker_note FROM session_hooks").fetchone()
    return str(note)


def test_the_worker_reads_what_was_appended_and_stores_the_records_of_one_full_read(tmp_path: Path) -> None:
    source = next(p for p in TRANSCRIPTS if "4d5611e5" in p.name)
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    waiting = [n for n in _waiting(lines) if 400 <= n < 700 and read_transcript(lines[:n]).provisional]
    cuts = [300, waiting[0], 750]  # one cut while a tool call waits for its result
    grown = Claude(tmp_path / "grown")
    notes = []
    for start, end in zip([0, *cuts], [*cuts, len(lines)], strict=True):
        with grown.transcript.open("a", encoding="utf-8") as out:
            out.write("".join(lines[start:end]))
        notes.append(_ingest(grown))
    whole = Claude(tmp_path / "whole", transcript=source)
    notes.append(_ingest(whole))
    expected, state = [], None
    for start, end in zip([0, *cuts], [*cuts, len(lines)], strict=True):
        piece = read_transcript([line.rstrip("\n") for line in lines[start:end]], state=state)
        expected.append(f"{len(piece.records)} record(s) from {end - start} line(s), 0 skipped")
        state = piece.state
    expected.append(f"{len(read_transcript(lines).records)} record(s) from {len(lines)} line(s), 0 skipped")
    assert [n.split("; ")[0] for n in notes] == expected, notes
    assert all("read the " in n for n in notes[1:4]) and "appended since the last ingest" in notes[1], notes
    grown_records, whole_records = _records(grown), _records(whole)
    provisional = {(r.kind, r.key) for r in read_transcript(lines[: cuts[1]]).provisional}
    assert provisional  # the cut left a call waiting; its provisional records stay as any earlier ingest left them
    assert [r for r in grown_records if (r[0], r[1]) not in provisional] == [
        r for r in whole_records if (r[0], r[1]) not in provisional
    ]


def test_a_transcript_rewritten_before_the_offset_is_read_again_whole(tmp_path: Path) -> None:
    source = next(p for p in TRANSCRIPTS if "4d5611e5" in p.name)
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    claude = Claude(tmp_path)
    claude.transcript.write_text("".join(lines[:200]), encoding="utf-8")
    _ingest(claude)
    claude.transcript.write_text("".join(lines[100:260]), encoding="utf-8")  # same size or not: the start changed
    note = _ingest(claude)
    assert note.startswith(f"{len(read_transcript(lines[100:260]).records)} record(s) from 160 line(s)"), note


def _cursor(claude: Claude) -> dict[str, Any]:
    with sqlite3.connect(claude.db) as db:
        (text,) = db.execute("SELECT text FROM session_records WHERE kind = 'hook' AND key = 'transcript'").fetchone()
    return dict(json.loads(text))


def test_a_half_written_last_line_waits_for_the_next_ingest(tmp_path: Path) -> None:
    source = next(p for p in TRANSCRIPTS if "4d5611e5" in p.name)
    lines = source.read_text(encoding="utf-8").splitlines(keepends=True)
    claude = Claude(tmp_path)
    claude.transcript.write_text("".join(lines[:50]) + lines[50][:40], encoding="utf-8")
    _ingest(claude)
    assert _cursor(claude)["offset"] == len("".join(lines[:50]).encode())
    with claude.transcript.open("a", encoding="utf-8") as out:
        out.write(lines[50][40:] + lines[51])
    note = _ingest(claude)
    assert note.startswith(f"{len(read_transcript(lines[50:52], state=read_transcript(lines[:50]).state).records)}")
    assert " from 2 line(s)" in note, note
