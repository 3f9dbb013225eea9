"""Every command of `ctxkeep` explains itself: a description, and help for each positional and option (as sqlite-utils
checks every command is documented)."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator

from ctxkeep.cli.main import build_parser
from tests.paths import TESTS

ROOT = TESTS.parent


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (sub)command under `parser`, nested ones (`evidence get`, `memory list`) included, with its words."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name), sub
                yield from commands(sub, (*path, name))


def undocumented(parser: argparse.ArgumentParser) -> list[str]:
    """The arguments of one command without help text (`-h` and subcommand groups aside)."""
    missing = []
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)):
            continue
        if not action.help or action.help == argparse.SUPPRESS:
            missing.append("/".join(action.option_strings) or action.dest)
    return missing


def test_every_command_has_a_description_and_every_argument_has_help() -> None:
    found = list(commands(build_parser()))
    assert len(found) >= 20
    problems = []
    for words, sub in found:
        if not (sub.description or "").strip():
            problems.append(f"ctxkeep {' '.join(words)}: no description")
        problems += [f"ctxkeep {' '.join(words)} {name}: no help" for name in undocumented(sub)]
    assert problems == []


def test_the_top_level_help_lists_every_command_with_its_summary() -> None:
    parser = build_parser()
    text = parser.format_help()
    listed = {words[0] for words, _ in commands(parser) if len(words) == 1}
    for name in listed:
        assert f"    {name}" in text, name
    assert {"memory", "journal", "ui"} <= listed


def test_the_help_of_a_nested_command_runs_and_names_its_arguments() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ctxkeep", "evidence", "get", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0
    for word in ("--n", "--start", "--end", "--chunk", "--max-tokens", "--mode", "ref"):
        assert word in done.stdout
    assert "lines from the start" in done.stdout or "how many lines" in done.stdout
