"""What git itself printed about the work: a commit made, a push, and which files `git status` shows changed.

A commit is read from git's own line (`[branch 1a2b3c4] message`), so it counts whatever command made it (a compound
command, an alias, a failing step after it) and a `git commit` that committed nothing does not. `git status` (long or
short form) says which files are not committed at that moment; later edits add to them. Standard library only
(per-event hooks).
"""

from __future__ import annotations

import re

from ctxkeep.text import LazyPattern

_COMMIT_LINE = LazyPattern(
    r"^\[(?P<branch>[^\]\s]+)(?: \(root-commit\))? (?P<hash>[0-9a-f]{7,40})\] (?P<subject>.+)$", re.M
)
_PUSH_LINE = LazyPattern(
    r"^\s*(?:[0-9a-f]{7,40}\.\.\.?[0-9a-f]{7,40}|\* \[new (?:branch|tag)\]|\+ [0-9a-f]{7,40}\.\.\.[0-9a-f]{7,40})\s+"
    r"(?P<local>\S+)\s+->\s+(?P<remote>\S+)",
    re.M,
)
_STATUS_COMMAND = LazyPattern(r"(?:^|[\s;&|(])git\s+(?:-C\s+\S+\s+)?status\b")
_LONG_ENTRY = LazyPattern(
    r"^\s+(?:modified|new file|deleted|renamed|typechange|both modified):\s+(?:.+ -> )?(?P<path>.+?)\s*$", re.M
)
_SHORT_ENTRY = LazyPattern(r"^(?:[ MADRCU?!][ MADRCU?!]) (?:.+ -> )?(?P<path>\S.*?)\s*$", re.M)
_UNTRACKED = LazyPattern(r"^Untracked files:\n(?:\s+\(use .*\)\n)?(?P<block>(?:\t.+\n?)+)", re.M)
_CLEAN = LazyPattern(r"nothing to commit, working tree clean|nothing added to commit but untracked")
_NOTHING = LazyPattern(r"nothing to commit|nothing added to commit|no changes added to commit")


_ON_BRANCH = LazyPattern(
    r"^(?:(?:On branch |Switched to (?:a new |and reset )?branch ')(?P<name>[^\s']+)|HEAD detached (?:at|from) \S+)",
    re.M,
)
_SHOW_CURRENT = LazyPattern(  # the whole command: a compound one's output is not only the branch
    r"^\s*git\s+(?:-C\s+\S+\s+)?(?:branch\s+--show-current|rev-parse\s+--abbrev-ref\s+HEAD)\s*(?:2>\S+\s*)?$"
)
_BRANCH_NAME = LazyPattern(r"^[\w./-]{1,120}$")


def branch_of(command: str, output: str) -> str | None:
    """The branch git says the work is on: `git status`'s "On branch", a checkout's or switch's "Switched to
    branch", `git branch --show-current`; "HEAD" when git says it is detached; the last one an output names, else
    None."""
    found = [m.group("name") or "HEAD" for m in _ON_BRANCH.finditer(output)]
    if found:
        return found[-1]
    lines = output.strip().splitlines()
    if _SHOW_CURRENT.search(command) and len(lines) <= 1 and _BRANCH_NAME.match(lines[0].strip() if lines else "HEAD"):
        return lines[0].strip() if lines else "HEAD"  # --show-current prints nothing on a detached HEAD
    return None


def commit_of(output: str) -> tuple[str, str, str] | None:
    """(hash, subject, branch) of the last commit git reports in `output`, else None."""
    found = list(_COMMIT_LINE.finditer(output))
    if not found:
        return None
    last = found[-1]
    return last.group("hash"), last.group("subject").strip(), last.group("branch")


_HEREDOC = LazyPattern(r"<<-?\s*['\"]?(\w+)['\"]?[^\n]*\n(.*?)\n\s*\1\b", re.S)
_OPTION_TEXT = r"(?:=|\s+)(?:\"((?:[^\"\\]|\\.)*)\"|'([^']*)')"  # an option's quoted value: "…" or '…'
_MESSAGE_ARG = LazyPattern(r"(?:-m|--message)" + _OPTION_TEXT)


def commit_body(command: str) -> str:
    """What a `git commit` command's message says after its subject (a heredoc's lines, or each `-m` after the
    first): the why and the what a commit states, as lines; "" when it has none."""
    found = _HEREDOC.search(command)
    if found:
        lines = found.group(2).splitlines()[1:]
    else:
        messages = [a or b for a, b in _MESSAGE_ARG.findall(command)]
        lines = [line for m in messages[1:] for line in m.splitlines()] + (
            messages[0].splitlines()[1:] if messages else []
        )
    return "\n".join(line.strip() for line in lines if line.strip())


_PR_CREATE = LazyPattern(r"(?:^|[\s;&|(])gh\s+pr\s+create\b")
_PR_URL = LazyPattern(r"https://\S+/pull/\d+")
_PR_TITLE = LazyPattern(r"(?:--title|-t)" + _OPTION_TEXT)
_PR_BODY = LazyPattern(r"(?:--body|-b)" + _OPTION_TEXT, re.S)


def pull_request_of(command: str, output: str) -> tuple[str, str, str] | None:
    """(url, title, description) of the pull request a `gh pr create` opened (its URL in `output`), else None."""
    url = _PR_URL.search(output) if _PR_CREATE.search(command) else None
    if url is None:
        return None
    title, given, heredoc = _PR_TITLE.search(command), _PR_BODY.search(command), _HEREDOC.search(command)
    body = heredoc.group(2) if heredoc else (given.group(1) or given.group(2)) if given else ""
    return url.group(0), (title.group(1) or title.group(2)) if title else "", body.strip()


_CONFLICT = LazyPattern(r"^CONFLICT \([^)]*\): (?:Merge conflict in )?(?P<path>\S+)", re.M)
_STOPPED = LazyPattern(
    r"Automatic merge failed; fix conflicts and then commit the result|Resolve all conflicts manually|"
    r"could not apply [0-9a-f]{7,}|after resolving the conflicts, mark the corrected paths"
)


def conflicts_of(output: str) -> list[str] | None:
    """The files a merge, rebase or cherry-pick stopped on with conflicts (git's CONFLICT lines), else None."""
    if not _STOPPED.search(output):
        return None
    return list(dict.fromkeys(m.group("path") for m in _CONFLICT.finditer(output)))


def committed_nothing(output: str) -> bool:
    """Whether git said a commit had nothing to record."""
    return _NOTHING.search(output) is not None


def push_of(output: str) -> str | None:
    """`local -> remote` of the last ref git reports pushed in `output`, else None."""
    found = list(_PUSH_LINE.finditer(output))
    return f"{found[-1].group('local')} -> {found[-1].group('remote')}" if found else None


def status_of(command: str, output: str) -> list[str] | None:
    """The files `git status` lists as changed (paths as git prints them), [] for a clean tree; None when `command`
    is not a `git status` or its output is not one."""
    if not _STATUS_COMMAND.search(command):
        return None
    if _CLEAN.search(output):
        return []
    paths = [m.group("path") for m in _LONG_ENTRY.finditer(output)]
    untracked = _UNTRACKED.search(output)
    if untracked:
        paths += [line.strip() for line in untracked.group("block").splitlines() if line.strip()]
    if not paths and ("--short" in command or "-s" in command.split() or "--porcelain" in command):
        paths = [m.group("path") for m in _SHORT_ENTRY.finditer(output)]
    if not paths and "On branch" not in output and "HEAD detached" not in output:
        return None  # not git status output we can read (an error, a wrapper's own text)
    return [p.strip('"') for p in dict.fromkeys(paths)]


def same_file(edited: str, listed: str) -> bool:
    """Whether an edited file (an absolute path) is the file git lists (a path relative to the repository; a folder
    when it ends with `/`)."""
    if listed.endswith("/"):
        return edited.startswith(listed) or f"/{listed}" in edited
    return edited == listed or edited.endswith("/" + listed)
