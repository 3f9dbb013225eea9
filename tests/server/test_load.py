"""Load on one file from four clients at once (two on one HTTP server, two on their own stdio servers): no errors
but documented refusals, no acknowledged write lost. The full 4 × 500 run with latency percentiles is bench/load.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.load import load

pytestmark = pytest.mark.slow


def test_four_clients_at_once_lose_nothing(tmp_path: Path) -> None:
    result = load(tmp_path, 60)
    assert result["operations"] >= 4 * 50
    assert result["counted"]["memories"] > 0 and result["counted"]["results"] > 0
