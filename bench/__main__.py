"""Run benchmarks and write bench/RESULTS.md and bench/results.json.

Usage: python -m bench [NAME ...] [--quick]. Each bench/<name>.py exposes run(quick) -> dict
with "title", "rows" (each {"metric", "value", "baseline", "target", ...}) and "notes".
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import json
import sys
from pathlib import Path
from typing import Any

from bench.common import machine_line

HERE = Path(__file__).resolve().parent
ALL = [
    "checkpoint",
    "startup",
    "codex_exec",
    "evidence",
    "compress",
    "working_set",
    "model_view",
    "memory",
    "hooks",
    "client_hooks",
    "live_hooks",
    "load",
    "teams",
    "redaction",
    "fidelity",
]


def render(report: dict[str, Any]) -> str:
    lines = [
        "# Benchmark results",
        "",
        f"- machine: {report['machine']}",
        f"- date: {report['date']}",
        f"- mode: {'quick' if report['quick'] else 'full'}",
        "",
    ]
    for name, result in sorted(report["benchmarks"].items(), key=lambda item: ALL.index(item[0])):
        lines += [
            f"## {result['title']} (`bench/{name}.py`)",
            "",
            "| metric | ctxkeep | baseline | target |",
            "|---|---|---|---|",
        ]
        lines += [
            f"| {r['metric']} | {r['value']} | {r.get('baseline', '')} | {r.get('target', '')} |"
            for r in result["rows"]
        ]
        lines += ["", *[f"- {note}" for note in result.get("notes", [])], ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench")
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {', '.join(ALL)})")
    parser.add_argument("--quick", action="store_true", help="smaller sizes, for CI")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {
        "machine": machine_line(),
        "date": dt.date.today().isoformat(),
        "quick": args.quick,
        "benchmarks": {},
    }
    previous = HERE / "results.json"
    if args.names and previous.exists():  # a partial run updates those benchmarks and keeps the others
        kept = json.loads(previous.read_text())
        if kept.get("quick") == args.quick:
            report["benchmarks"] = {k: v for k, v in kept["benchmarks"].items() if k in ALL}
    for name in args.names or ALL:
        print(f"running bench/{name}.py ...", file=sys.stderr)
        report["benchmarks"][name] = importlib.import_module(f"bench.{name}").run(args.quick)
    (HERE / "results.json").write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    (HERE / "RESULTS.md").write_text(render(report))
    print(render(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
