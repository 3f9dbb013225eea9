"""What an issue tracker was told about a work item: the status the agent set with the tracker's own command line.

A work item the agent claimed (`bd update spotter-gqc.6 --status in_progress`) and never closed is work in
progress at the cut, whatever the todo list says; one it closed (`bd close …`, `gh issue close 42`) is done as far
as the tracker knows. Read from the command the agent ran (not its output), and only when the call succeeded. The
trackers read: beads (`bd`), the GitHub CLI (`gh issue`) and jira-cli (`jira issue move`). Standard library only
(per-event hooks).
"""

from __future__ import annotations

from ctxkeep.text import LazyPattern

_CHAIN = ("&&", "||", ";", "|", "\n")
_STATUS_OPTIONS = ("--status", "-s")
_REDIRECT = LazyPattern(r"^\d*(?:[<>]|&>)")


def status_changes(command: str) -> list[tuple[str, str]]:
    """(work item, status) for each item a tracker command in `command` sets, in order ("closed", "open",
    "in_progress", or the status as given)."""
    if "bd " not in command and "gh " not in command and "jira " not in command:
        return []
    changes: list[tuple[str, str]] = []
    for words in _commands(command):
        changes += _beads(words) or _github(words) or _jira(words)
    return changes


def _commands(command: str) -> list[list[str]]:
    """The simple commands of a command line, as words (a line shlex cannot split is read as no command)."""
    import shlex  # here: only a command that names a tracker pays for it

    flat = command
    for separator in _CHAIN:
        flat = flat.replace(separator, "\n")
    out = []
    for part in flat.splitlines():
        try:
            words = shlex.split(part)
        except ValueError:
            continue
        if words:
            out.append(words)
    return out


def _beads(words: list[str]) -> list[tuple[str, str]]:
    if len(words) < 3 or words[0] != "bd" or words[1] not in ("close", "reopen", "update"):
        return []
    verb, rest = words[1], words[2:]
    status = {"close": "closed", "reopen": "open"}.get(verb) or _option(rest, _STATUS_OPTIONS)
    return [(item, status) for item in _positional(rest)] if status else []


def _positional(words: list[str]) -> list[str]:
    """The words that are neither an option, an option's value (`--reason "done"`, `-s open`) nor a redirection."""
    return [w for n, w in enumerate(words) if not _special(w) and (n == 0 or not _takes_value(words[n - 1]))]


def _special(word: str) -> bool:
    return word.startswith("-") or _REDIRECT.match(word) is not None


def _takes_value(word: str) -> bool:
    """An option without its `=value`, or a redirection without its target (`>`, `2>>`)."""
    return (word.startswith("-") and "=" not in word) or word.rstrip("0123456789").endswith(("<", ">"))


def _github(words: list[str]) -> list[tuple[str, str]]:
    if len(words) < 4 or words[:2] != ["gh", "issue"] or words[2] not in ("close", "reopen"):
        return []
    return [(f"#{words[3].lstrip('#')}", "closed" if words[2] == "close" else "open")]


def _jira(words: list[str]) -> list[tuple[str, str]]:
    if len(words) < 5 or words[:3] != ["jira", "issue", "move"]:
        return []
    return [(words[3], words[4])]


def _option(words: list[str], names: tuple[str, ...]) -> str | None:
    """The value of the first of `names` in `words` (`--status x` or `--status=x`)."""
    for n, word in enumerate(words):
        if word in names and n + 1 < len(words):
            return words[n + 1]
        for name in names:
            if word.startswith(name + "="):
                return word[len(name) + 1 :]
    return None


DONE_STATUSES = frozenset(("closed", "done", "resolved", "completed", "complete"))


def is_done(status: str) -> bool:
    return status.casefold().replace(" ", "_") in DONE_STATUSES
