"""The second blind set checks itself (bench/blind2/check.py, written with the set by its reviewer): its patterns
compile, each item matches the transcript before its cut, and each session is byte-identical to its public source."""

from __future__ import annotations

import subprocess
import sys

from tests.paths import ROOT


def test_the_second_blind_set_passes_its_own_checks() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "blind2" / "check.py")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2_000:] + done.stderr[-2_000:]
    assert "ALL CHECKS PASSED" in done.stdout


def test_the_third_blind_set_passes_its_own_checks() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "blind3" / "check.py")], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-2_000:] + done.stderr[-2_000:]
    assert "ALL CHECKS PASSED" in done.stdout
