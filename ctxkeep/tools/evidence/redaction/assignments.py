"""Literal values assigned to secret-named keys: env and config lines, name/value pairs, JSON, keyword arguments.

A quoted literal is a value wherever it stands (`"password": "…"`, `password="…"`, `token = '…'`), and is
redacted whole, spaces included. An unquoted right-hand side is a value in config text (`.env`, YAML, INI,
docker-compose, shell) but an expression in source code (`password = forms.CharField(`, `token = next_token`),
so in code only shell-style `NAME=value` lines count.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ctxkeep.tools.evidence.redaction.rules import Context, Found, Rule, Span, matches
from ctxkeep.tools.evidence.redaction.values import (
    NAME_WORDS,
    SECRET_NAME,
    is_expression,
    is_identifier,
    is_placeholder,
    literal_secret,
)

# Where a key's name ends: a secret word, then the separator. Found in the lower-cased view, then checked whole.
# Each pattern starts with a literal, which the regex engine finds fast; one pattern per word.
_END = r"(?![\w-])(?P<close>[ \t]*[\"'`]?\]?)(?P<sep>[ \t]*(?::=|=>|=(?![=~>])|:(?![:=])))[ \t]*"
_WORDS = ("pass(?:word|wd|phrase)?", "secret", "token", "key(?:[_-]?id)?")
_TRIGGERS = [(re.compile(f"(?i){word}{_END}"), re.compile(f"{word}{_END}")) for word in _WORDS]
_NAME = re.compile(rf"(?i)[\w.$-]*?{SECRET_NAME}$")
_KEY_BEFORE = re.compile(r"[\w.$-]*$")
# What may stand before a key on its line: grep's `file:12:`, a diff's `+`, a list's `- `, `export`, `ENV`.
_LEAD = re.compile(r"[ \t]*(?:[\w./~-]+:\d+[:-][ \t]*|[\w./~-]*\.env[\w.-]*:)?(?:[+>-][ \t]*)?"
                   r"(?P<shell>(?:export|set|setenv|env|local|readonly|declare(?:[ \t]+-\w+)?|ENV|ARG)[ \t]+)?")
_UPPER_KEY = re.compile(r"[A-Z][A-Z0-9_]*")
_PAIR = (r"name ?\"?[ \t]*:[ \t]*(?P<q>[\"']?)(?P<key>[\w.-]*?{name}) ?(?P=q)[ \t]*"
         r"(?:,\s*\"value ?\"|\r?\n[ \t]*(?:-[ \t]+)?value)[ \t]*:[ \t]*")
_PAIRS, _PAIRS_CI = re.compile(_PAIR.format(name=SECRET_NAME)), re.compile("(?i)" + _PAIR.format(name=SECRET_NAME))
_OPEN_QUOTE = re.compile(r"[rRbBuUfF]{0,2}([\"'`])")
_CLOSED = {q: re.compile(rf"(?:[^{q}\\\n]|\\.)*{q}") for q in "\"'`"}
_COMMENT = re.compile(r"[ \t]+(?:#|//|;).*$")


def quoted_at(view: str, position: int) -> Span | None:
    """The inside of the string literal that opens at `position`, if one does and closes on its line."""
    opened = _OPEN_QUOTE.match(view, position)
    if not opened:
        return None
    quote, start = opened.group(1), opened.end()
    if view.startswith(quote * 2, start) or "r" in opened.group(0).lower():
        return None  # a triple-quoted string (documentation), a raw string (a regex)
    closed = _CLOSED[quote].match(view, start)
    return (start, closed.end() - 1) if closed else None


def unquoted_at(view: str, position: int) -> tuple[Span, bool]:
    """The first word from `position` (to a space, a quote or the line's end), and whether more words follow it."""
    end = view.find("\n", position)
    line = view[position:len(view) if end == -1 else end].rstrip("\r")
    word = re.match(r"[^\s\"'`]*", line)
    assert word is not None
    rest = _COMMENT.sub("", line[word.end():]).strip()
    return (position, position + word.end()), bool(rest)


def _unquoted_secret(context: Context, value: str, key: str, form: str, more: bool, shell: bool) -> bool:
    """form: `=` (NAME=value, no spaces), ` = ` (spaced) or `:`."""
    if (more and form != "=") or is_placeholder(value, key) or is_expression(value, key):
        return False
    if not context.is_code or shell:
        return True
    upper = key == key.upper()
    return upper and (form == "=" or not is_identifier(value))


def _literal(context: Context, value: str, key: str) -> bool:
    return not is_placeholder(value, key) and literal_secret(value, context.is_code)


def _value(context: Context, position: int, key: str, form: str, shell: bool) -> Span | None:
    view = context.view
    quoted = quoted_at(view, position)
    if quoted is not None:
        return quoted if _literal(context, view[quoted[0]:quoted[1]], key) else None
    if position < len(view) and view[position] in "\"'`":
        return None  # an unclosed or triple-quoted string
    span, more = unquoted_at(view, position)
    return span if span[1] > span[0] and _unquoted_secret(context, view[span[0]:span[1]], key, form, more, shell) else None


def _assignments(context: Context) -> Iterator[Found]:
    """Every `key = value`, `key: value`, `"key": "value"`, `key="value"` whose key is a secret name.

    On its own line (after a prefix grep, diff or a shell may add) the value may be unquoted (env_secret);
    elsewhere only a string literal counts (assigned_secret), except upper-case `NAME=value` as in shells.
    """
    view = context.view
    found = [match for pattern, folded in _TRIGGERS for match in matches(context, pattern, folded)]
    for match in sorted(found, key=lambda m: m.start()):
        word = match.start()
        before = _KEY_BEFORE.search(view, max(0, word - 80), word)
        key_start = before.start() if before else word
        key = view[key_start:match.start("close")]
        if not _NAME.match(key):
            continue
        sep = match.group("sep").strip()
        line_start = view.rfind("\n", 0, key_start) + 1
        lead = _LEAD.fullmatch(view, line_start, key_start)
        spaced = match.group("sep") != sep or match.end() > match.end("sep")
        if lead and sep in "=:" and not match.group("close").strip():
            form = ":" if sep == ":" else (" = " if spaced else "=")
            span = _value(context, match.end(), key, form, bool(lead.group("shell")))
            kind = "env_secret"
        elif sep == "=" and not spaced and not match.group("close") and _UPPER_KEY.fullmatch(key) and (key_start == 0 or view[key_start - 1] not in "$./-"):
            span, kind = _value(context, match.end(), key, "=", True), "env_secret"
        else:
            quoted = quoted_at(view, match.end())
            span = quoted if quoted and _literal(context, view[quoted[0]:quoted[1]], key) else None
            kind = "assigned_secret"
        if span:
            yield span[0], span[1], kind


def _pairs(context: Context) -> Iterator[Found]:
    """Kubernetes and ECS env entries: `name: DB_PASSWORD` then `value: …`, in YAML or JSON."""
    for match in matches(context, _PAIRS_CI, _PAIRS):
        span = _value(context, match.end(), context.view[match.start("key"):match.end("key")], ":", False)
        if span:
            yield span[0], span[1], "env_secret"


ASSIGNMENT_RULES: list[Rule] = [Rule(NAME_WORDS, _assignments), Rule((r"name\W{0,3}:",), _pairs)]
