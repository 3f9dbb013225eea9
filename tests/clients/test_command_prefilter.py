"""The hooks skip compiling a command pattern when the command holds none of the words the pattern starts with; that
shortcut must never change an answer: on every shell command of the shared sessions, and on the commands the capture
tests use, a pattern that matches is one the shortcut lets through."""

from __future__ import annotations

import json

import pytest

from ctxkeep.clients.core import commands
from tests.claude_home import DATA

PATTERNS = {**commands._CHECKS, "vcs": commands._VCS, "spec": commands._SPEC_COMMANDS}
WRITTEN = [
    "pytest -q",
    "cd app && python3 -m pytest tests/",
    "npm run test -- --watch=false",
    "make test-unit",
    "uv run -m pytest",
    "./gradlew test",
    "cargo clippy --all",
    "go vet ./...",
    "(cd web; yarn build)",
    "mise run lint",
    "tsc --noEmit",
    "bundle exec rspec",
    "git -C repo commit -m x",
    "gh pr create --fill",
    "bd show spotter-42",
    "make",
    "echo done; ruff check .",
    "FOO=1 pytest",
    "time go test ./...",
]


def _shell_commands() -> list[str]:
    found = []
    for path in sorted(DATA.glob("claude-code-transcripts*/*.jsonl")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if '"Bash"' not in line:
                continue
            try:
                content = json.loads(line)["message"]["content"]
            except (ValueError, KeyError, TypeError):
                continue
            found += [
                block["input"]["command"]
                for block in content
                if isinstance(block, dict)
                and block.get("name") == "Bash"
                and isinstance(block.get("input", {}).get("command"), str)
            ]
    return found


@pytest.mark.skipif(not DATA.is_dir(), reason="../shared/data is absent")
def test_the_shortcut_never_hides_a_match_in_the_shared_sessions() -> None:
    shell = _shell_commands()
    assert len(shell) > 300, len(shell)
    matched = 0
    for command in shell + WRITTEN:
        flat = " ".join(command.split())
        for what, pattern in PATTERNS.items():
            if pattern.search(flat):
                matched += 1
                assert commands.may_run(flat, what), (what, command)
    assert matched > 100  # the patterns did match: the check above was exercised


def test_the_shortcut_skips_commands_no_pattern_could_match() -> None:
    assert not any(commands.may_run("ls -la src", what) for what in PATTERNS)
    assert commands.check_kind("ls -la src") is None and commands.vcs_action("cat README.md") is None
    assert [commands.check_kind(c) for c in WRITTEN[:3]] == ["test", "test", "test"]


def test_a_step_that_installs_a_checker_does_not_run_it() -> None:
    assert commands.check_kind("uv pip install ruff pytest pytest-cov && uv run ruff check src/ tests/") == "lint"
    assert commands.check_kind("pip install pytest") is None
    assert commands.check_kind("npm install -D vitest; npx vitest run") == "test"
    assert commands.check_kind("uv add --dev pytest && uv run pytest -q") == "test"
    assert commands.check_kind("pytest tests/test_install.py") == "test"  # a test about installing still runs tests


def test_asking_where_a_checker_is_or_which_version_it_is_does_not_run_it() -> None:
    assert (
        commands.check_kind("grep -n -A5 '\\[tool.ruff\\]' pyproject.toml; echo ---; which ruff uv 2>/dev/null") is None
    )
    assert commands.check_kind("ruff --version && mypy --version") is None
    assert commands.check_kind("command -v pytest && pytest -q") == "test"
    assert commands.check_kind("type mypy; mypy src") == "lint"
