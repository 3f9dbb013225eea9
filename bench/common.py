"""Shared helpers: percentiles, the machine line, and real text from ../shared/data."""

from __future__ import annotations

import json
import os
import platform
import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank; values need not be sorted."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary_ms(seconds: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in seconds]
    return {"p50_ms": round(statistics.median(ms), 3), "p95_ms": round(percentile(ms, 95), 3), "n": len(ms)}


def machine_line() -> str:
    cpu = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"


def swe_lines(limit: int) -> list[str]:
    """First lines of the real SWE-bench agent messages (real agent prose), or [] when the data is absent."""
    folder = SHARED_DATA / "swe-trajectories"
    lines: list[str] = []
    for path in sorted(folder.glob("*.traj.json")) if folder.is_dir() else []:
        for message in json.loads(path.read_text())["messages"]:
            text = message["content"] if isinstance(message["content"], str) else json.dumps(message["content"])
            first = next((line.strip() for line in text.splitlines() if len(line.strip()) > 20), "")
            if message["role"] == "assistant" and first:
                lines.append(first[:300])
            if len(lines) >= limit:
                return lines
    return lines
