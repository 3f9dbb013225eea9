"""Redaction in both directions: library code left alone, realistic secrets caught, and its speed.

Code nobody here wrote: every .py, .js and .go file in the test venv's site-packages and in the TypeScript
client's node_modules is redacted, and a file counts as changed when a single character differs. Every marker
left is listed with its kind and file, so each remaining hit can be inspected. The realistic secrets are the
test list in tests/secret_samples.py (every format issue 14 names); a sample counts as caught when none of its
secrets is left. Speed: redaction alone (CPU time, so other load on the machine does not count) over the corpus and over
the real-text fixture the evidence bench puts.
"""

from __future__ import annotations

import re
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.common import ROOT
from bench.fixture import items
from ctxkeep.tools.redaction.redact import redact_secrets
from tests.secret_samples import SECRETS

SUFFIXES = (".py", ".js", ".go")
_MARKER = re.compile(r"\[REDACTED:(\w+)\]")


def corpus_roots() -> list[Path]:
    site = Path(sys.prefix) / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    return [root for root in (site, ROOT / "tests" / "ts_client" / "node_modules") if root.is_dir()]


def corpus_files() -> list[Path]:
    """Every .py, .js and .go file under the corpus roots, sorted (symlinks and undecodable files included later as skipped),
    except ctxkeep's own package when pip installed it there (its demo holds a secret on purpose; the code is ours)."""
    return sorted(
        p
        for root in corpus_roots()
        for p in root.rglob("*")
        if p.suffix in SUFFIXES and p.is_file() and not p.is_symlink() and not p.is_relative_to(root / "ctxkeep")
    )


@dataclass
class Scan:
    files: Counter[str] = field(default_factory=Counter)
    changed: Counter[str] = field(default_factory=Counter)
    changed_files: list[str] = field(default_factory=list)
    markers: list[tuple[str, str, str]] = field(default_factory=list)  # kind, file, the changed line as redacted
    chars: int = 0
    seconds: float = 0.0

    @property
    def changed_share(self) -> float:
        return sum(self.changed.values()) / max(1, sum(self.files.values()))


def scan(files: list[Path]) -> Scan:
    """Redact each file; count files per language and changed files, and keep every marker with its line."""
    result = Scan()
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        result.files[path.suffix] += 1
        result.chars += len(text)
        started = time.process_time()
        redacted, _ = redact_secrets(text)
        result.seconds += time.process_time() - started
        if redacted != text:
            result.changed[path.suffix] += 1
            result.changed_files.append(str(path))
            for line in redacted.splitlines():
                for kind in _MARKER.findall(line):
                    result.markers.append((kind, str(path), line.strip()[:160]))
    return result


def caught() -> list[str]:
    """Names of the realistic samples with every secret redacted."""
    return [s.name for s in SECRETS if not any(secret in redact_secrets(s.text)[0] for secret in s.secrets)]


def _speed(quick: bool) -> dict[str, float]:
    rates = {}
    for name, texts in (
        ("2 KB", items(1_000 if quick else 3_000, 2_000, seed=1)),
        ("64 KB", items(40 if quick else 100, 64_000, seed=2)),
    ):
        best = float("inf")
        for _ in range(3):
            started = time.process_time()
            for text in texts:
                redact_secrets(text)
            best = min(best, time.process_time() - started)
        rates[name] = sum(len(t) for t in texts) / best / 1e6
    return rates


def run(quick: bool) -> dict[str, Any]:
    result = scan(corpus_files())
    names = caught()
    speed = _speed(quick)
    per_language = ", ".join(f"{result.files[s]:,} {s}" for s in SUFFIXES)
    changed = ", ".join(f"{result.changed[s]} {s}" for s in SUFFIXES)
    kinds = Counter(kind for kind, _, _ in result.markers)
    notes = [f"corpus: {', '.join(str(r) for r in corpus_roots())}; {result.chars / 1e6:.0f} M characters"]
    notes += [
        f"marker left: {kind} in {path.split('site-packages/')[-1].split('node_modules/')[-1]}: `{line}`"
        for kind, path, line in result.markers
    ]
    missed = [s.name for s in SECRETS if s.name not in names]
    notes += [f"missed: {', '.join(missed)}"] if missed else []
    return {
        "title": "Redaction: library code left alone, realistic secrets caught",
        "rows": [
            {"metric": "files scanned (.py, .js, .go)", "value": per_language, "baseline": "", "target": ""},
            {
                "metric": "library files changed by redaction",
                "value": f"{sum(result.changed.values())} of {sum(result.files.values()):,} "
                f"({result.changed_share:.2%}; {changed})",
                "baseline": "236 of 3,765 (6.3%) with the rules before issue 14, on the test environment's corpus",
                "target": "≤ 0.1%",
            },
            {
                "metric": "markers left in library code, by kind",
                "value": ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none",
                "baseline": "",
                "target": "each inspected",
            },
            {
                "metric": "realistic secrets caught (tests/secret_samples.py)",
                "value": f"{len(names)}/{len(SECRETS)}",
                "baseline": "",
                "target": f"{len(SECRETS)}/{len(SECRETS)}",
            },
            {
                "metric": "redaction speed over the corpus (library code)",
                "value": f"{result.chars / max(result.seconds, 1e-9) / 1e6:.1f} MB/s",
                "baseline": "",
                "target": "",
            },
            {
                "metric": "redaction speed, real-text items of 2 KB / 64 KB",
                "value": f"{speed['2 KB']:.1f} / {speed['64 KB']:.1f} MB/s",
                "baseline": "",
                "target": "",
            },
        ],
        "notes": notes,
        "raw": {
            "files": dict(result.files),
            "changed": dict(result.changed),
            "changed_files": result.changed_files,
            "markers": [list(m) for m in result.markers],
            "caught": names,
            "missed": missed,
            "speed_mb_s": speed,
        },
    }
