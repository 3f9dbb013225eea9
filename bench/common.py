"""Shared helpers: percentiles, the machine line, real text from ../shared/data, and hook processes timed."""

from __future__ import annotations

import json
import os
import platform
import resource
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = ROOT.parent / "shared" / "data"
# as installed by pip: compiled modules cached (this machine sets PYTHONDONTWRITEBYTECODE, which a user's does not)
BASE_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
_INSTALLED = Path(sys.executable).parent / "ctxkeep"
CTXKEEP_COMMAND = [str(_INSTALLED)] if _INSTALLED.exists() else [sys.executable, "-m", "ctxkeep"]
# the floor a hook is compared with: a bare interpreter that imports what any hook needs
FLOOR_COMMAND = [sys.executable, "-c", "import json, sqlite3"]


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0-100) by nearest rank; values need not be sorted."""
    ordered = sorted(values)
    index = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def summary_ms(seconds: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in seconds]
    return {"p50_ms": round(statistics.median(ms), 3), "p95_ms": round(percentile(ms, 95), 3), "n": len(ms)}


def process_seconds(args: list[str], stdin: bytes, env: dict[str, str]) -> float:
    """Wall time of one new process from spawn to exit; it must exit 0 (AssertionError with its stderr otherwise)."""
    started = time.perf_counter()
    done = subprocess.run(args, input=stdin, capture_output=True, env=env, timeout=300)
    elapsed = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    return elapsed


def process_cost(args: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds from spawn to exit, CPU seconds the process used: user + system) of one new process; it must exit
    0 (AssertionError with its stderr otherwise). CPU time is what a loaded machine does not stretch."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(args, input=stdin, capture_output=True, env=env, timeout=300)
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the child is reaped: its times are in
    assert done.returncode == 0, done.stderr
    return elapsed, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def free_port() -> int:
    """A loopback TCP port nothing listens on now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, tries: int = 300) -> None:
    """Return once something listens on 127.0.0.1:port, or after `tries` attempts 0.1 s apart (the run then fails
    on its first request, naming the server)."""
    for _ in range(tries):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.1)


def machine_line() -> str:
    cpu = "unknown cpu"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} cores, {cpu}, Python {platform.python_version()}"
    )


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
