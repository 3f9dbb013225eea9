"""SIGKILL during each kind of write: on reopen the file is sound, nothing is half-written, and everything
acknowledged before the kill is there."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent


def _run_and_kill(kind: str, db_path: Path, delay: float) -> int:
    """Start the writer, SIGKILL it `delay` seconds after its first acknowledged write; the last acknowledged count."""
    proc = subprocess.Popen([sys.executable, "-m", "tests.writer", kind, str(db_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    first = proc.stdout.readline()
    assert first.startswith("ack"), first
    time.sleep(delay)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    lines = [first, *proc.stdout.read().splitlines()]
    return int(lines[-1].split()[1])


def _check(kind: str, conn: sqlite3.Connection, acknowledged: int) -> None:
    one = lambda sql: conn.execute(sql).fetchone()[0]  # noqa: E731
    assert one("SELECT count(*) FROM evidence") == one("SELECT count(*) FROM evidence_fts_docsize")  # index whole
    assert one("SELECT count(*) FROM evidence WHERE blob_id NOT IN (SELECT id FROM blobs)") == 0
    if kind == "evidence":
        records = one("SELECT count(*) FROM evidence")
        assert records % 50 == 0 and records // 50 >= acknowledged  # whole batches only, at most one more than acknowledged
        assert records // 50 <= acknowledged + 1
    elif kind == "compress":
        assert one("SELECT count(*) FROM task_digests WHERE task_id = 'crash'") == 1
        refs = conn.execute("SELECT refs_json FROM compress_cursors").fetchall()
        for (refs_json,) in refs:
            for ref in json.loads(refs_json):
                assert conn.execute("SELECT count(*) FROM evidence WHERE ref = ?", (ref,)).fetchone()[0] == 1  # offloaded outputs retrievable
    elif kind == "forget":
        tombstones = one("SELECT count(*) FROM memory_tombstones")
        assert tombstones >= acknowledged and one("SELECT count(*) FROM memories") <= 1  # at most the one written before the kill
        assert one("SELECT count(*) FROM memories") == one("SELECT count(*) FROM memory_fts_docsize")
    else:
        assert one("SELECT count(*) FROM actions WHERE status = 'succeeded'") >= acknowledged
        assert one("SELECT count(*) FROM actions WHERE status = 'open'") <= 1  # only the intent the kill interrupted


@pytest.mark.parametrize("kind", ["evidence", "compress", "forget", "journal"])
def test_sigkill_during_writes_leaves_no_half_written_record(tmp_path: Path, kind: str) -> None:
    rng = random.Random(kind)
    for attempt in range(3):
        db_path = tmp_path / f"crash-{attempt}.db"
        acknowledged = _run_and_kill(kind, db_path, rng.uniform(0.05, 0.5))
        assert acknowledged >= 1
        with sqlite3.connect(db_path) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            _check(kind, conn, acknowledged)
