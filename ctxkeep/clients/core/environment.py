"""Facts about the machine a session runs on, learned from a shell error and the command that got past it.

A command the shell could not find (`cargo: command not found`, `'grep' is not recognized …`, `No module named
pytest`) is a fact until a later command runs it: plainly (the fact no longer holds) or only after some setup
(`source "$HOME/.cargo/env" && cargo build`, `export PATH=… && …`, `.venv/bin/python -m pytest`: the fix is the fact).
Shell syntax the shell refused (`&&` in older PowerShell) is a fact as well. Each fact is keyed by what was missing,
so the latest command decides it. The scripts a project's package.json defines (`verify` = `turbo run typecheck lint
test build`) say how its checks run, once the agent read it. Standard library only (per-event hooks).
"""

from __future__ import annotations

import json
import re

from ctxkeep.text import LazyPattern

_MISSING = LazyPattern(
    r"(?:^|: )(?P<a>[\w.+-]+): command not found(?!:)|(?:^|/)(?:ba|da|z)?sh(?:: (?:line )?\d+)?: (?P<g>[\w.+-]+): not found|"
    r"command not found: (?P<b>[\w.+-]+)|'(?P<c>[\w.+-]+)' is not recognized as an internal or external command|"
    r"The term '(?P<d>[\w.+-]+)' is not recognized as (?:the )?name of a cmdlet|"
    r"env: '?(?P<e>[\w.+-]+)'?: No such file or directory|No module named '?(?P<f>[\w.]+)'?",
    re.M,
)
_SYNTAX = LazyPattern(
    r"The token '(?P<token>[^']+)' is not a valid statement separator|"
    r"(?P<here>syntax error near unexpected token `(?P<near>[^']+)')"
)
_SEGMENT = LazyPattern(r"\s*(?:&&|\|\||;|\n)\s*")
Fact = tuple[
    str, str, str, str
]  # (key, text, status, how it failed): open (missing), fixed (ran another way), resolved


def _first_line(text: str, needle: str) -> str:
    line = next((line.strip() for line in text.splitlines() if needle in line), "")
    return line[:200]


def missing_in(output: str) -> list[tuple[str, str]]:
    """(what is missing, the error line) for each command or module the shell or Python could not find in `output`."""
    out: dict[str, str] = {}
    for found in _MISSING.finditer(output[-8_000:]):
        name = next(g for g in found.groups() if g)
        out.setdefault(name, _first_line(output, found.group(0).strip()) or found.group(0).strip())
    return list(out.items())


def calling(command: str, name: str) -> str | None:
    """The part of `command` that calls `name` (as a word, a module or a path ending in it), with the setup before it
    (`source …`, `export …`, `VAR=…`; not a `cd`): how the shell was asked to run it. None when it does not."""
    word = re.escape(name.split(".", maxsplit=1)[0])
    pattern = re.compile(rf"(?:^|[\s/\"'=]){word}(?=$|[\s\"';&|).])")
    segments = [s for s in _SEGMENT.split(command.strip()) if s]
    for n, segment in enumerate(segments):
        found = pattern.search(segment)
        if found:
            setup = [s for s in segments[:n] if not s.startswith("cd ")]
            return " && ".join([*setup, segment[: found.end()].strip()])
    return None


def facts(command: str, output: str, failed: bool, known: dict[str, tuple[str, str]]) -> list[Fact]:
    """The facts one shell command establishes: what it could not find (when it failed), and for each thing known
    missing (`known`: key -> (status, how it was called when it failed)) that it ran, how it ran."""
    out: list[Fact] = []
    if failed:
        for name, line in missing_in(output):
            how = calling(command, name) or name
            out.append((f"missing:{name}", f"`{how}` failed: {line}", "open", how))
        syntax = _SYNTAX.search(output[-4_000:])
        if syntax and syntax.group("token"):
            token = syntax.group("token")
            out.append(
                (f"syntax:{token}", f"this shell refuses `{token}` between commands ({syntax.group(0)})", "open", "")
            )
        return out
    for key, (status, failed_as) in known.items():
        if not key.startswith("missing:") or status == "resolved":
            continue
        name = key.split(":", 1)[1]
        ran = calling(command, name)
        if ran is None:
            continue
        if ran == failed_as:
            out.append((key, f"`{ran}` runs now", "resolved", failed_as))
        else:
            out.append((key, f"`{failed_as}` failed ({name} not found); it ran as `{ran}`", "fixed", failed_as))
    return out


_LINE_NUMBER = LazyPattern(r"^\s*\d+\u2192", re.M)  # Claude Code's Read numbers each line: "     1→{"
MAX_SCRIPTS = 10


def package_scripts(path: str, text: str) -> str | None:
    """The scripts a package.json the agent read defines, as one line (`name`: command; …), else None."""
    if not path.endswith("package.json"):
        return None
    try:
        data = json.loads(_LINE_NUMBER.sub("", text[:200_000]))
    except ValueError:
        return None
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict) or not scripts:
        return None
    listed = [f"`{name}`: {command}" for name, command in scripts.items() if isinstance(command, str)][:MAX_SCRIPTS]
    return f"{path.rsplit('/', 2)[-2] if '/' in path else '.'}/package.json scripts: " + "; ".join(listed)
