"""stderr log lines of `ctxkeep serve`: one plain line per record, never wrapped at 80 columns (issue 14: 25)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.raw_stdio import INITIALIZE
from tests.paths import TESTS

ROOT = TESTS.parent


@pytest.mark.slow
def test_a_long_log_message_is_one_plain_line(tmp_path: Path) -> None:
    folder = tmp_path / ("deeply-nested-folder-name-" * 4)
    folder.mkdir()
    db = folder / "ctxkeep.db"
    db.write_bytes(b"this file is not an SQLite database at all " * 100)
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "checkpoint_list", "arguments": {}}}
    messages = [INITIALIZE, {"jsonrpc": "2.0", "method": "notifications/initialized"}, call]
    proc = subprocess.Popen(
        [sys.executable, "-m", "ctxkeep", "serve"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "CTXKEEP_DB": str(db), "CTXKEEP_PROJECT": str(tmp_path), "COLUMNS": "80"},
    )
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("".join(json.dumps(m) + "\n" for m in messages))
    proc.stdin.flush()
    answers = [json.loads(proc.stdout.readline()) for _ in range(2)]  # initialize, then the call (the database opens)
    assert answers[1]["id"] == 1 and answers[1]["result"]["isError"], answers
    _, stderr = proc.communicate(timeout=60)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, "", stderr)
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    logged = [line for line in lines if "cannot use its database" in line]
    assert len(logged) == 1 and str(db) in logged[0] and "not a" in logged[0], done.stderr  # whole, on one line
    assert "\x1b[" not in done.stderr  # no colour codes
    assert logged[0].split(" ")[1] == "ERROR" and " ctxkeep: " in logged[0], logged[0]  # time, level, logger: message
