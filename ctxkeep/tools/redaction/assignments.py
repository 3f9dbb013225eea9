"""Literal values assigned to secret-named keys: env and config lines, name/value pairs, JSON, keyword arguments.

A quoted literal is a value wherever it stands (`"password": "…"`, `password="…"`, `token = '…'`), and is
redacted whole, spaces included. An unquoted right-hand side is a value in config text (`.env`, YAML, INI,
docker-compose, shell) but an expression in source code (`password = forms.CharField(`, `token = next_token`),
so in code only shell-style `NAME=value` lines count.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ctxkeep.text import LazyPattern
from ctxkeep.tools.redaction.rules import Context, Found, Rule, Span, matches, pattern_rule
from ctxkeep.tools.redaction.values import (
    NAME_WORDS,
    SECRET_NAME,
    chosen,
    is_expression,
    is_identifier,
    is_placeholder,
)

# Where a key's name ends: a secret word, then the separator. Found in the lower-cased view, then checked whole.
# Each pattern starts with a literal, which the regex engine finds fast; one pattern per word.
_END = r"(?![\w-])(?P<close>[ \t]*[\"'`]?\]?)(?P<sep>[ \t]*(?::=|=>|=(?![=~>])|:(?![:=])))[ \t]*"
_WORDS = ("pass(?:word|wd|phrase)?", "secret", "token", "key(?:[_-]?(?:id|base))?")
_TRIGGERS = [(LazyPattern(f"(?i){word}{_END}"), LazyPattern(f"{word}{_END}")) for word in _WORDS]
# `\Z`, not `$`: searched up to a key's first letter, `$` would also match before the newline ending the line above,
# taking the previous line's last word for the key's start.
_NAME = LazyPattern(rf"(?i)[\w.$-]*?{SECRET_NAME}\Z")
_KEY_BEFORE = LazyPattern(r"[\w.$-]*\Z")
# What may stand before a key on its line: grep's `file:12:`, a diff's `+`, a list's `- `, `export`, `ENV`.
_LEAD = LazyPattern(
    r"[ \t]*(?:[\w./~-]+:\d+[:-][ \t]*|[\w./~-]*\.env[\w.-]*:|//[^\s=]*:)?(?:[+>-][ \t]*)?"
    r"(?P<shell>(?:export|set|setenv|env|local|readonly|declare(?:[ \t]+-\w+)?|ENV|ARG)[ \t]+)?"
)
_UPPER_KEY = LazyPattern(r"[A-Z][A-Z0-9_]*")
_CONNECTION_VALUE = LazyPattern(r"[^;\s\"'`]*")
_NETRC = r"machine(?<![\w-]machine)\s+\S+(?:\s+(?:login|account)\s+\S+)*\s+password\s+(?P<pw>\S+)"
_PAIR = (
    r"name ?\"?[ \t]*:[ \t]*(?P<q>[\"']?)(?P<key>[\w.-]*?{name}) ?(?P=q)[ \t]*"
    r"(?:,\s*\"value ?\"|\r?\n[ \t]*(?:-[ \t]+)?value)[ \t]*:[ \t]*"
)
_PAIRS, _PAIRS_CI = LazyPattern(_PAIR.format(name=SECRET_NAME)), LazyPattern("(?i)" + _PAIR.format(name=SECRET_NAME))
_OPEN_QUOTE = LazyPattern(r"[rRbBuUfF]{0,2}([\"'`])")
_CLOSED = {q: LazyPattern(rf"(?:[^{q}\\\n]|\\.)*{q}") for q in "\"'`"}
# Bounds that keep the work per candidate constant on one huge line: a value or string literal longer than this is
# not a password, and what stands before a key on its line is short.
_LONGEST, _LONGEST_LEAD = 16_384, 256
_COMMENT = LazyPattern(r"[ \t]+(?:#|//|;).*$")


def quoted_at(view: str, position: int) -> Span | None:
    """The inside of the string literal that opens at `position`, if one does and closes on its line."""
    opened = _OPEN_QUOTE.match(view, position)
    if not opened:
        return None
    quote, start = opened.group(1), opened.end()
    if view.startswith(quote * 2, start) or "r" in opened.group(0).lower():
        return None  # a triple-quoted string (documentation), a raw string (a regex)
    closed = _CLOSED[quote].match(view, start, start + _LONGEST)
    return (start, closed.end() - 1) if closed else None


def unquoted_at(view: str, position: int) -> tuple[Span, bool]:
    """The first word from `position` (to a space, a quote or the line's end), and whether more words follow it."""
    end = view.find("\n", position, position + _LONGEST)
    line = view[position : min(len(view), position + _LONGEST) if end == -1 else end].rstrip("\r")
    word = re.match(r"[^\s\"'`]*", line)
    assert word is not None
    rest = _COMMENT.sub("", line[word.end() :]).strip()
    return (position, position + word.end()), bool(rest)


def _unquoted_secret(context: Context, value: str, key: str, form: str, more: bool, shell: bool) -> bool:
    """form: `=` (NAME=value, no spaces), ` = ` (spaced) or `:`."""
    if (more and form != "=") or is_placeholder(value, key) or is_expression(value, key):
        return False
    if not context.is_code or shell:
        return True
    upper = key == key.upper()
    return upper and (form == "=" or not is_identifier(value))


def _literal(context: Context, value: str, key: str, shell: bool = False) -> bool:
    """A string literal that holds a secret: not a placeholder, and in source code chosen to be one, unless it is
    assigned as a shell does (`export NAME='…'`, `NAME='…'`)."""
    return not is_placeholder(value, key) and (shell or chosen(value) or not context.is_code)


def _value(context: Context, position: int, key: str, form: str, shell: bool) -> Span | None:
    view = context.view
    quoted = quoted_at(view, position)
    if quoted is not None:
        shell_like = shell or (form == "=" and _UPPER_KEY.fullmatch(key) is not None)
        return quoted if _literal(context, view[quoted[0] : quoted[1]], key, shell_like) else None
    if position < len(view) and view[position] in "\"'`":
        return None  # an unclosed or triple-quoted string
    span, more = unquoted_at(view, position)
    return (
        span
        if span[1] > span[0] and _unquoted_secret(context, view[span[0] : span[1]], key, form, more, shell)
        else None
    )


def _connection_value(context: Context, position: int, key: str) -> Span | None:
    """`Server=db;User Id=sa;Password=…;`: the value runs to the next `;`."""
    word = _CONNECTION_VALUE.match(context.view, position)
    assert word is not None
    value = word.group()
    return word.span() if _literal(context, value, key) and not is_expression(value, key) else None


def _assignment(context: Context, match: re.Match[str]) -> Found | None:
    """The value a trigger match assigns, if its key is a secret name and the value a secret."""
    view = context.view
    before = _KEY_BEFORE.search(view, max(0, match.start() - 80), match.start())
    key_start = before.start() if before else match.start()
    key = view[key_start : match.start("close")]
    if not _NAME.match(key):
        return None
    sep = match.group("sep").strip()
    spaced = any(
        c in " \t" for c in context.text[match.end("close") : match.end()]
    )  # in the text: the view blanks escapes
    bare = not match.group("close").strip()  # no quote or bracket between the key and its separator
    line_start = view.rfind("\n", max(0, key_start - _LONGEST_LEAD), key_start) + 1
    lead = _LEAD.fullmatch(view, line_start, key_start) if line_start or key_start <= _LONGEST_LEAD else None
    span: Span | None
    if lead and sep in "=:" and bare:
        form = ":" if sep == ":" else (" = " if spaced else "=")
        span, kind = _value(context, match.end(), key, form, bool(lead.group("shell"))), "env_secret"
    elif sep == "=" and not spaced and bare and key_start and view[key_start - 1] == ";":
        span, kind = _connection_value(context, match.end(), key), "env_secret"
    elif (
        sep == "="
        and not spaced
        and bare
        and _UPPER_KEY.fullmatch(key)
        and (key_start == 0 or view[key_start - 1] not in "$./-")
    ):
        span, kind = _value(context, match.end(), key, "=", True), "env_secret"
    else:
        quoted = quoted_at(view, match.end())
        span = quoted if quoted and _literal(context, view[quoted[0] : quoted[1]], key) else None
        kind = "assigned_secret"
    return (span[0], span[1], kind) if span else None


def _assignments(context: Context) -> Iterator[Found]:
    """Every `key = value`, `key: value`, `"key": "value"`, `key="value"` whose key is a secret name.

    On its own line (after a prefix grep, diff or a shell may add) the value may be unquoted (env_secret);
    elsewhere only a string literal counts (assigned_secret), except upper-case `NAME=value` as in shells and
    `;Password=…` in connection strings.
    """
    found = [match for pattern, folded in _TRIGGERS for match in matches(context, pattern, folded)]
    for match in sorted(found, key=lambda m: m.start()):
        assigned = _assignment(context, match)
        if assigned:
            yield assigned


def _pairs(context: Context) -> Iterator[Found]:
    """Kubernetes and ECS env entries: `name: DB_PASSWORD` then `value: …`, in YAML or JSON."""
    for match in matches(context, _PAIRS_CI, _PAIRS):
        span = _value(context, match.end(), context.view[match.start("key") : match.end("key")], ":", False)
        if span:
            yield span[0], span[1], "env_secret"


def _netrc(secret: str, match: re.Match[str], context: Context) -> bool:
    return not is_placeholder(secret)


ASSIGNMENT_RULES: list[Rule] = [
    Rule(NAME_WORDS, _assignments),
    Rule((r"name\W{0,3}:",), _pairs),
    pattern_rule("netrc_password", ("machine",), _NETRC, "pw", _netrc),
]
