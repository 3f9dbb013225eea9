"""Each blind set from the second on checks itself (bench/blind*/check.py, written with the set by its reviewer): its
patterns compile, each item matches the transcript before its cut, and each session is byte-identical to its public
source."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.paths import ROOT


@pytest.mark.parametrize("name", ["blind2", "blind3", "blind4", "blind5"])
def test_a_blind_set_passes_its_own_checks(name: str) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / name / "check.py")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2_000:] + done.stderr[-2_000:]
    assert "ALL CHECKS PASSED" in done.stdout
