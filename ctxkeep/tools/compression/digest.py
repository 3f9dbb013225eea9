"""The digest: everything old in a history folded into one deterministic, dense message.

Entries are ranked so what steers the next step comes first — files edited, errors, the
user's corrections, decisions — and routine lines (commands, counts, the list of offloaded
outputs) fill what budget is left. The same messages always give the same bytes.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ctxkeep.text import inline_quote, one_line
from ctxkeep.tools.shared.messages import Call, Message, Output

_EDIT_TOOLS = {
    "edit",
    "multiedit",
    "write",
    "notebookedit",
    "str_replace_editor",
    "str_replace_based_edit_tool",
    "create_file",
    "write_file",
    "edit_file",
    "apply_patch",
}
_READ_TOOLS = {"read", "view", "read_file", "open_file", "cat"}
_EXIT = re.compile(
    r"<returncode>\s*(-?\d+)\s*</returncode>|\bexit(?:ed with)? (?:code|status)[: ]+(-?\d+)", re.IGNORECASE
)
_RAISED = re.compile(r"^\s*([A-Z][A-Za-z]*(?:Error|Exception)): ", re.MULTILINE)
_RETURNCODE = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>", re.IGNORECASE)
_ERROR = re.compile(r"\b([A-Z][A-Za-z]*(?:Error|Exception)|FAILED|Traceback|error\[E\d+\])")
_LOCATION = re.compile(r'File "([^"]+)", line (\d+)|(?:^|\s)([\w./-]+\.\w+):(\d+)(?::\d+)?')
_DECISION = re.compile(
    r"\b(?:I will|I'll|let's|let me|decided|decision|instead|the fix|root cause|the issue is|the problem is|plan)\b",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
# Messages from the agent's harness, not the user: format reminders, interruptions, notifications.
_HARNESS = re.compile(
    r"^\s*(?:Please always provide EXACTLY ONE action|\[Request interrupted|<task-notification>|<system-reminder>|"
    r"<command-name>|<local-command-stdout>|Caveat: The messages below)",
    re.IGNORECASE,
)
_ID = re.compile(r"(?<![\w.])(?:#\d{2,}|[A-Z]{2,}-\d+|\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d{4,}(?:\.\d+)?)(?![\w])")
_REDIRECT_WORD = re.compile(r"^(?:\d|&)?>>?(\S*)$")
_PATCH_TARGET = re.compile(r"^\+\+\+ (?:b/)?(\S+)", re.MULTILINE)
_OPEN_WRITE = re.compile(r"open\(\s*['\"]([^'\"]+)['\"]\s*,\s*['\"][wax]")
_HEREDOC_BODY = re.compile(r"(<<-?\s*['\"]?(\w+)['\"]?[^\n]*\n).*?\n\s*\2\b", re.DOTALL)


@dataclass
class Step:
    """One tool call with what came back: the unit most digest lines describe."""

    call: Call
    output: Output | None
    message: int
    ref: str | None = None


@dataclass
class Facts:
    edited: list[str] = field(default_factory=list)
    created: list[str] = field(default_factory=list)
    read: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)
    error_steps: dict[str, Step] = field(default_factory=dict)
    commands: list[str] = field(default_factory=list)


def command_of(call: Call) -> str:
    """The shell command of a call, or its input in short JSON."""
    data = call.input
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            return str(data)
    if isinstance(data, dict) and isinstance(data.get("command"), str) and call.name.lower() not in _EDIT_TOOLS:
        return str(data["command"])
    return json.dumps(data, sort_keys=True, ensure_ascii=False)


def _input_dict(call: Call) -> dict[str, Any]:
    data = call.input
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except ValueError:
            return {}
    return data if isinstance(data, dict) else {}


def _add(target: list[str], path: str) -> None:
    path = path.strip().strip("'\"")
    if path and path not in target and not path.startswith("/dev/") and path != "-":
        target.append(path)


def shell_writes(command: str) -> list[str]:
    """Files a shell command writes: `sed -i`, redirections (`>`, `>>`, `cat > f <<EOF`), `tee`, patches, open(..., 'w')."""
    paths: list[str] = []
    for target in _PATCH_TARGET.findall(command) + _OPEN_WRITE.findall(command):
        _add(paths, target)
    command = _HEREDOC_BODY.sub(lambda m: m.group(1), command)  # what a heredoc writes is data, not shell
    for segment in re.split(r"&&|\|\|?|;|\n", command):
        try:
            words = shlex.split(segment, posix=True)
        except ValueError:
            words = segment.split()
        while words and words[0] in ("do", "then", "else", "sudo", "time", "{", "("):
            words = words[1:]
        if words[:1] == ["sed"] and any(w.startswith("-i") or w == "--in-place" for w in words):
            for word in reversed(words[1:]):
                if not word.startswith("-"):
                    _add(paths, word)
                    break
        if words[:1] == ["tee"]:
            for word in words[1:]:
                if not word.startswith("-"):
                    _add(paths, word)
        for target in _redirect_targets(words):
            _add(paths, target)
    return paths


def _redirect_targets(words: list[str]) -> list[str]:
    """Targets of `>`, `>>`, `2>`, `&>` among shell words (quoted text stays one word, so `"1 > 0"` is no redirect)."""
    targets = []
    for index, word in enumerate(words):
        found = _REDIRECT_WORD.match(word)
        if not found:
            continue
        target = found.group(1) or (words[index + 1] if index + 1 < len(words) else "")
        if target and not target.startswith("&"):
            targets.append(target)
    return targets


def _file_effects(step: Step, facts: Facts) -> None:
    name = step.call.name.lower()
    data = _input_dict(step.call)
    path = str(data.get("file_path") or data.get("path") or data.get("notebook_path") or "")
    if name in _EDIT_TOOLS and path and data.get("command") != "view":
        if name in ("write", "create_file", "write_file") or data.get("command") == "create":
            _add(facts.created, path)
        _add(facts.edited, path)
    elif name in _READ_TOOLS and path:
        _add(facts.read, path)
    elif name in ("bash", "shell", "run_command", "execute_command", "terminal"):
        for target in shell_writes(command_of(step.call)):
            _add(facts.edited, target)


def exit_code(output: Output | None) -> str:
    if output is None:
        return "no output"
    text = output.text
    found = _RETURNCODE.search(text[:300]) or _EXIT.search(text[-2_000:])
    if found:
        return f"exit {next(g for g in found.groups() if g is not None)}"
    return "error" if output.is_error else "ok"


def _errors(step: Step, facts: Facts) -> None:
    """Errors a step ran into: any error name in an output that failed (non-zero exit, an error flag, a
    traceback); in one that succeeded, only printed exceptions (`ValueError: …` at a line start), so an
    `except ValueError` line found by grep is not an error seen."""
    if step.output is None:
        return
    text = step.output.text
    succeeded = exit_code(step.output) in ("exit 0", "ok") and "Traceback (most recent call last)" not in text
    for found in _RAISED.finditer(text) if succeeded else _ERROR.finditer(text):
        kind = found.group(1)
        if kind == "Traceback":
            continue
        before = text[max(0, found.start() - 2_000) : found.start()]
        locations = _LOCATION.findall(before) or _LOCATION.findall(text[found.start() : found.start() + 300])
        where = ""
        if locations:
            file, line, other, other_line = locations[-1]
            where = f" at {inline_quote(f'{file or other}:{line or other_line}', 200)}"
        facts.errors[kind] = f"{kind}{where} (message {step.message}"
        facts.error_steps[kind] = step


def _same_command(a: Step, b: Step) -> bool:
    return a.call.name == b.call.name and command_of(a.call)[:60] == command_of(b.call)[:60]


def _resolution(kind: str, step: Step, later: list[Step]) -> str:
    """Whether a later run of the same command came back without this error."""
    for other in later:
        if (
            other.message > step.message
            and other.output is not None
            and _same_command(step, other)
            and kind not in other.output.text
            and exit_code(other.output) in ("exit 0", "ok")
        ):
            return f"; resolved at message {other.message})"
    return "; not seen resolved)"


def collect(steps: list[Step], later: list[Step] | None = None) -> Facts:
    """What the steps did; `later` (the steps after them) tells which errors a later step resolved."""
    facts = Facts()
    for step in steps:
        _file_effects(step, facts)
        _errors(step, facts)
        facts.commands.append(f"{inline_quote(command_of(step.call), 120)} → {exit_code(step.output)}")
    for kind, step in facts.error_steps.items():
        facts.errors[kind] += _resolution(kind, step, steps + (later or []))
    return facts


def _user_corrections(messages: list[Message]) -> list[str]:
    texts = [m.text.strip() for m in messages if m.role == "user" and not m.outputs and m.text.strip()]
    return list(dict.fromkeys(text for text in texts if not _HARNESS.match(text)))


def _system_notes(messages: list[Message]) -> list[str]:
    return list(dict.fromkeys(m.text.strip() for m in messages if m.role in ("system", "developer") and m.text.strip()))


def _decisions(messages: list[Message]) -> list[str]:
    found: list[str] = []
    for message in messages:
        if message.role == "assistant":
            for sentence in _SENTENCE_END.split(message.text[:20_000]):
                sentence = " ".join(sentence.split())
                if 20 <= len(sentence) <= 300 and _DECISION.search(sentence) and sentence not in found:
                    found.append(sentence)
    return found[-8:]


def _ids(messages: list[Message]) -> list[str]:
    seen: dict[str, int] = {}
    for message in messages:
        for value in _ID.findall(message.text):
            seen.setdefault(value, message.index)
    return [f"{value} (message {index})" for value, index in list(seen.items())[:15]]


def build_digest(
    messages: list[Message],
    steps: list[Step],
    budget: int,
    count: Callable[[str], int],
    later: list[Step] | None = None,
    band_ref: str | None = None,
) -> str:
    """The digest text for `messages` (the digest band), at most `budget` tokens by `count`."""
    facts = collect(steps, later)
    first, last = (messages[0].index, messages[-1].index) if messages else (0, 0)
    tools = Counter(step.call.name for step in steps)
    sections: list[tuple[str, list[str]]] = [
        ("System notes (verbatim)", _system_notes(messages)),
        ("Files edited", [inline_quote(path) for path in facts.edited]),
        ("Errors seen (last occurrence; resolved?)", list(facts.errors.values())),
        ("User corrections and new requirements (verbatim)", _user_corrections(messages)),
        ("Decisions stated", _decisions(messages)),
        ("Files created", [inline_quote(path) for path in facts.created]),
        ("Files read", [inline_quote(path) for path in facts.read]),
        ("Commands run", facts.commands),
        ("Numbers and ids mentioned", _ids(messages)),
        ("Tool calls", [", ".join(f"{name} {n}" for name, n in sorted(tools.items()))] if tools else []),
        (
            "Outputs stored as evidence (evidence_get reads them back)",
            [
                f"{s.ref}: {s.call.name} {inline_quote(command_of(s.call), 60)} → {exit_code(s.output)}"
                for s in steps
                if s.ref
            ],
        ),
    ]
    verbatim = f"; the messages verbatim: {band_ref}" if band_ref else ""
    header = f"[ctxkeep digest of messages {first}–{last}: {len(messages)} messages, {len(steps)} tool calls{verbatim}]"
    return _fit(header, sections, budget, count)


def _fit(header: str, sections: list[tuple[str, list[str]]], budget: int, count: Callable[[str], int]) -> str:
    lines, used = [header], count(header)
    for title, entries in sections:
        if not entries:
            continue
        heading = f"## {title}"
        shown = 0
        for entry in entries:
            line = f"- {one_line(entry)}"  # every entry on one line: none can start a heading of its own
            cost = count(line) + (count(heading) if shown == 0 else 0) + 1
            if used + cost > budget:
                break
            if shown == 0:
                lines.append(heading)
            lines.append(line)
            used += cost
            shown += 1
        rest = len(entries) - shown
        note = f"- … {rest} more" if shown else f"## {title}: {rest} not shown"
        if rest and used + count(note) + 1 <= budget:
            lines.append(note)
            used += count(note) + 1
    return "\n".join(lines)
