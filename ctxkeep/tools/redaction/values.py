"""What counts as a secret value: the names that hold secrets, and the values that only look like one.

A value is redacted when it is a literal: code (a call, an attribute, a subscript, a type, a keyword
constant), a reference (a variable, a template, a path) and a placeholder or documentation example
(`YOUR_API_KEY`, `<token>`, `xxxx`, AWS's `…EXAMPLE` keys, `user:pass@`) are not secrets and stay.
"""

from __future__ import annotations

import re

from ctxkeep.text import LazyPattern

# A key holds a secret when its name ends with one of these (any case): `DB_PASSWORD`, `apiKey`, `x-api-key`,
# `client_secret`, `GITHUB_TOKEN`, `private_key_id`. `token_type`, `PASSWORD_MIN_LENGTH` and `max_tokens` do not.
SECRET_NAME = (
    r"(?:pass(?:word|wd|phrase)|(?<=[_.-])pass|secret(?:[_-]?(?:access[_-]?)?key(?:[_-]?base)?)?|token|apikey"
    r"|(?:api|access|private|account|signing|encryption|master|client|app|auth|shared[_-]?access)[_-]?key"
    r"|private[_-]?key[_-]?id)"
)
NAME_WORDS = ("pass", "secret", "token", "key")  # one of these is in every secret name, lower case

_WORDS = frozenset(
    [
        "password",
        "passwd",
        "pass",
        "passphrase",
        "pwd",
        "secret",
        "secrets",
        "token",
        "tokens",
        "apikey",
        "key",
        "api",
        "accesskey",
        "secretkey",
        "privatekey",
        "accesstoken",
        "authtoken",
        "changeme",
        "changeit",
        "required",
        "optional",
        "none",
        "null",
        "nil",
        "undefined",
        "true",
        "false",
        "yes",
        "no",
        "on",
        "off",
        "dummy",
        "fake",
        "test",
        "testing",
        "foo",
        "bar",
        "baz",
        "foobar",
        "qux",
        "placeholder",
        "redacted",
        "hidden",
        "masked",
        "sample",
        "example",
        "guest",
        "string",
        "str",
        "value",
        "empty",
        "default",
        "unset",
        "notset",
        "todo",
        "tbd",
        "fixme",
        "pw",
        "read",
        "write",
    ]
)
_NAME_PART = frozenset(
    [
        "password",
        "passwd",
        "pass",
        "passphrase",
        "secret",
        "token",
        "key",
        "api",
        "access",
        "auth",
        "private",
        "client",
        "refresh",
        "bearer",
        "id",
    ]
)
_TEMPLATE = LazyPattern(r"\$\{|\$\(|\{\{|\{%|<%|%\(|%[sdrfi](?![A-Za-z0-9])|%\d|^\$|^%[\w]+%$|\{[^}\s]*\}")
_MASK = LazyPattern(r"(?i)x{4,}|(?:^|[-_.])x{3}(?:$|[-_.])|\*{3,}|\.{3}|…|•{3,}|^(.)\1*$|^<.*>$|^\[.*\]$")
_EXAMPLE = LazyPattern(
    r"EXAMPLE|(?i:(?:^|[^a-z])(?:your|example|sample|dummy|fake|placeholder|insert|replace|change)(?:[^a-z]|$))"
)
_PATH = LazyPattern(
    r"^(?:~|\.{1,2})?/[\w.@~+-]+(?:/[\w.@~+-]*)+$|^[A-Za-z]:\\|^file:|\.(?:pem|key|crt|cer|p12|pfx|json|txt|env|gpg|asc|jks|der)$"
)
_WEAK = LazyPattern(r"(?i)(?:pass(?:word)?|secret|token|key|test|admin|user|demo|guest|changeme)[\W_]*\d{1,4}!?")
_ESCAPED = LazyPattern(r"\\[ux][0-9a-fA-F]{2}")
_VERSION = LazyPattern(r"[~^>=<v]*\d+(?:\.\d+)+(?:[-+.][\w.]*)?")  # `"pbkdf2-password": "0.1.2"` in package.json
_COLOR = LazyPattern(r"^#[0-9a-fA-F]{3,8}$")
_IDENTIFIER = LazyPattern(r"[A-Za-z_$][\w$]*")
_DOTTED = LazyPattern(r"[A-Za-z_$][\w$]*(?:(?:\.|::|->)[A-Za-z_$][\w$]*)+")
_CALL = LazyPattern(r"[\w.$]+[(\[]")
_SYMBOLS = frozenset("!@#$%^&*+=?~/")
_OPERATORS = (" or ", " and ", " + ", " || ", " && ", " ?? ", " if ", " else ", " ? ")


def normalized(value: str) -> str:
    return re.sub(r"[\s_.\-]", "", value).lower()


def is_placeholder(value: str, key: str = "") -> bool:
    """A value that stands for a secret without being one: empty or short, a template, a mask, an example, a path,
    the name of a key (`"access_token"`), or the key's own name."""
    value = value.strip()
    if len(value) < 4 or "[REDACTED:" in value:
        return True
    flat = normalized(value)
    if flat in _WORDS or (key and flat == normalized(key.rsplit(".", 1)[-1])):
        return True
    if (
        _TEMPLATE.search(value)
        or _MASK.search(value)
        or _EXAMPLE.search(value)
        or _PATH.search(value)
        or _COLOR.match(value)
    ):
        return True
    if _ESCAPED.search(value) or _VERSION.fullmatch(value):
        return True
    parts = [p for p in re.split(r"[_.\-]", value.lower()) if p]
    # the name of a key or header: `x-api-key`, `refresh_token`
    return len(parts) > 1 and all(p.isalpha() for p in parts) and any(p in _NAME_PART for p in parts)


def is_expression(value: str, key: str = "") -> bool:
    """An unquoted value that is code: a call, subscript, collection, attribute, keyword constant, operator, a YAML
    anchor or alias, or the key's own name (`password=password`)."""
    value = value.strip()
    if not value:
        return True
    if _CALL.match(value) or value[0] in "=|&*[{(" or value[-1] in ",;:\\" or _DOTTED.fullmatch(value):
        return True
    if any(op in value for op in _OPERATORS):
        return True
    return bool(key) and normalized(value) == normalized(key.rsplit(".", 1)[-1])


def is_identifier(value: str) -> bool:
    """A bare name (`token_value`, `Error`, `str`): in code it refers to something, it is not a literal."""
    return _IDENTIFIER.fullmatch(value) is not None


def looks_random(value: str) -> bool:
    """Letters and digits mixed, 8 or more characters: how issued keys and generated passwords look."""
    return len(value) >= 8 and any(c.isdigit() for c in value) and any(c.isalpha() for c in value)


def chosen(value: str) -> bool:
    """Chosen to be a secret: 6+ characters, letters with a digit or a symbol. In source code a literal must look
    like this to be taken for one (`'IAmSensitive'` and `'honoishot'` are examples in docs; `'Zq8!vR2mK5wx'` is not)."""
    if len(value) < 6 or _WEAK.fullmatch(
        value
    ):  # `password1`, `admin123`: a weak password in a config, an example in code
        return False
    return any(c.isalpha() for c in value) and any(c.isdigit() or c in _SYMBOLS for c in value)
