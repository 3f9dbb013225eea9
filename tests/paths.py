"""Where things are, for a test in any folder of tests/: tests/ itself, and from it the project root and the package."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
PACKAGE = ROOT / "ctxkeep"
