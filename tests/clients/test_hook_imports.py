"""What a per-event hook process imports beyond the floor (`python -c "import json, sqlite3"`; with `os`, which `site`
imports for every process), on an interpreter without site-packages (`-S`, the tree on PYTHONPATH): the standard
library only, and none of its slow modules.

pathlib costs a hook ~4 ms (it pulls urllib.parse and ipaddress), importlib's package warnings, contextlib and shlex
a little each; a 2 KB tool output, a prompt or a stop needs none of them. (An editable install imports pathlib in
`site` for every process, which would hide it: hence `-S`.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from tests.paths import TESTS

ROOT = TESTS.parent
SLOW = {
    "pathlib",
    "urllib",
    "urllib.parse",
    "ipaddress",
    "fnmatch",
    "ntpath",
    "importlib",
    "warnings",
    "contextlib",
    "shlex",
    "inspect",
    "dataclasses",
    "typing",
    "subprocess",
    "threading",
    "tempfile",
    "unicodedata",
    "hashlib",
}
OUTPUT_2KB = "\n".join(f"lib/app/module_{n}.ex:{n}:pattern_match can never match the type" for n in range(36))
PROBE = (
    "import io, sys\n"
    "sys.stdin = io.TextIOWrapper(io.BytesIO(sys.argv[3].encode()))\n"
    "from ctxkeep.cli import main\n"
    "main(['hook', sys.argv[1], sys.argv[2]] if sys.argv[2] else ['hook', sys.argv[1]])\n"
    "import json\n"
    "sys.stderr.write('\\n' + json.dumps(sorted(sys.modules)))\n"
)


def _env(tmp: Path) -> dict[str, str]:
    (tmp / "project").mkdir(exist_ok=True)
    (tmp / "data").mkdir(exist_ok=True)  # CTXKEEP_DB's folder must exist (a wrong one is refused)
    return {
        "HOME": str(tmp),
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT),
        "CTXKEEP_DB": str(tmp / "data" / "ctxkeep.db"),
        "CTXKEEP_PROJECT": str(tmp / "project"),
    }


def _modules(args: list[str], env: dict[str, str]) -> set[str]:
    done = subprocess.run([sys.executable, "-S", *args], capture_output=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(json.loads(done.stderr.decode().strip().splitlines()[-1]))


def _floor(env: dict[str, str]) -> set[str]:
    return _modules(["-c", "import os, json, sqlite3, sys\nsys.stderr.write(json.dumps(sorted(sys.modules)))"], env)


def _session(**fields: Any) -> str:
    return json.dumps({"session_id": "s-1", "cwd": "/nonexistent", **fields})


CASES = {
    "claude-code post-tool-use, a 2 KB Bash output": (
        "post-tool-use",
        "",
        _session(
            tool_name="Bash",
            tool_input={"command": "mix dialyzer 2>&1 | head -40"},
            tool_response={"stdout": OUTPUT_2KB, "stderr": "", "interrupted": False},
            tool_use_id="t1",
        ),
    ),
    "claude-code user-prompt-submit": (
        "user-prompt-submit",
        "",
        _session(prompt="Never push to main; run mix test before every commit."),
    ),
    "claude-code stop": ("stop", "", _session(stop_hook_active=False)),
    "claude-code session-start (resume)": ("session-start", "", _session(source="resume")),
    "codex PostToolUse, a 2 KB output": (
        "codex",
        "PostToolUse",
        _session(tool_name="Bash", tool_input={"command": "make"}, tool_response=OUTPUT_2KB, tool_use_id="c1"),
    ),
    "gemini AfterTool, a 2 KB output": (
        "gemini",
        "AfterTool",
        _session(
            tool_name="run_shell_command", tool_input={"command": "make"}, tool_response={"llmContent": OUTPUT_2KB}
        ),
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_hook_imports_none_of_the_slow_standard_modules(tmp_path: Path, case: str) -> None:
    env = _env(tmp_path)
    first, second, stdin = CASES[case]
    prompt = CASES["claude-code user-prompt-submit"]
    _modules(["-c", PROBE, prompt[0], prompt[1], prompt[2]], env)  # the database exists: no first migration measured
    extra = _modules(["-c", PROBE, first, second, stdin], env) - _floor(env)
    ours = {m for m in extra if m == "ctxkeep" or m.startswith("ctxkeep.")}
    assert sorted((extra - ours) & SLOW) == [], case
    assert not any(m.startswith(("pydantic", "anyio", "aiosqlite", "tiktoken", "mcp")) for m in extra), case


def test_a_2kb_tool_output_costs_few_modules_beyond_the_floor(tmp_path: Path) -> None:
    """The 2 KB tool-output hook is the most frequent one: its standard-library imports beyond the floor stay few."""
    env = _env(tmp_path)
    first, second, stdin = CASES["claude-code post-tool-use, a 2 KB Bash output"]
    _modules(["-c", PROBE, first, second, stdin], env)
    extra = _modules(["-c", PROBE, first, second, stdin], env) - _floor(env)
    standard = sorted(m for m in extra if not (m == "ctxkeep" or m.startswith("ctxkeep.")))
    assert len(standard) <= 3, standard  # __future__ (annotations), zlib at most
