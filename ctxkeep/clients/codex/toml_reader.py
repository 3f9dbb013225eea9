"""Reading Codex's config.toml: the standard library's tomllib on Python 3.11+, the same parser as `tomli` on 3.10
(pyproject declares it for that version only)."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from tomllib import TOMLDecodeError, loads
else:
    from tomli import TOMLDecodeError, loads

__all__ = ["TOMLDecodeError", "loads"]
