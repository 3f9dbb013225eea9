"""Secrets in web and command-line shapes: URL passwords and query keys, headers, cookies, flags.

Patterns start with a literal where they can (`://`, `authorization`, `--`), which the regex engine finds fast;
case-insensitive ones are written in lower case and run over the lower-cased view.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from ctxkeep.text import LazyPattern
from ctxkeep.tools.redaction.rules import Context, Found, Rule, pattern_rule
from ctxkeep.tools.redaction.values import (
    NAME_WORDS,
    SECRET_NAME,
    chosen,
    is_expression,
    is_placeholder,
    looks_random,
)

# The password runs to the `@` before a host (a name, an optional port, then the end of the authority), so a
# password holding `/` or `@` is removed whole.
_URL_PASSWORD = (
    r"://(?<=[A-Za-z0-9+.]://)(?P<user>[^\s:/@?#\"'<>`]*):(?P<pw>[^\s\"'<>`,]{1,128}?)@"
    r"(?=\[|[\w.-]+(?::\d+)?(?:[/?#\s\"'<>`)\],;]|\Z))"
)
_QUERY = r"(?P<name>[\w.-]{1,60})=(?P<value>[^&\s#\"'<>;`]+)"
_QUERY_NAME = LazyPattern(rf"(?:{SECRET_NAME}|sig|signature|x-amz-credential)\Z")
_HEADER_VALUE = r"[ \t]*:[ \t]*(?P<value>[^\s\"'`,;]+)"
_HEADER_KEY = (
    r"(?P<tail>key)(?:" + "|".join(f"(?<={w}key)" for w in ("api-", "api", "access-", "access", "auth-", "auth")) + ")"
)
_HEADER_NAME = LazyPattern(r"[A-Za-z0-9-]*\Z")  # `\Z`: `$` also matches before a newline
_AUTH = r"authorization(?<!\wauthorization)[\"']?\s*[:=]\s*[\"']?"
_OTHER_SCHEMES = r"(?:token|bot|apikey|api-key|key|sso-key|ssws|splunk|geniekey)"
_FLAG = (
    r"--(?<![\w-]--)(?:[a-z0-9]+-)*(?:password|passwd|passphrase|token|secret|api-?key|access-key|secret-key)"
    r"(?:=|[ \t]+)(?P<q>[\"']?)(?P<value>[^\s\"'`;|&]+)(?P=q)"
)
_CURL_USER = r"[ \t]+[\"']?(?P<user>[^\s:\"'-][^\s:\"']*):(?P<value>[^\s\"']+)"
# `-p` holds a password only after these commands: `docker login -u ci -p …`, `sshpass -p …`, `twine upload -p …`,
# `mysql -p…`
_LOGIN_P = r"(?:login(?<=docker login)|login(?<=podman login)|sshpass|twine)[^\n|;&]*?[ \t]-p[ \t]*(?P<q>[\"']?)(?P<value>[^\s\"'`;|&]+)(?P=q)"
_MYSQL_P = r"mysql(?:dump|admin)?(?<![\w-]mysql)(?<![\w-]mysqldump)(?<![\w-]mysqladmin)[^\n|;&]*?[ \t]-p(?P<value>[^\s\"'`;|&-][^\s\"'`;|&]*)"
# `aws configure set aws_secret_access_key …`, `npm config set //host/:_authToken …`: a secret-named setting, its value
_CONFIG_SET = rf"config(?:ure)?[ \t]+set[ \t]+(?P<name>[\w./:-]{{0,80}}?{SECRET_NAME})[ \t]+(?P<q>[\"']?)(?P<value>[^\s\"'`;|&]+)(?P=q)"
_COOKIE_HEADER = LazyPattern(r"cookie[ \t]*:[ \t]*(?P<value>[^\r\n\"'`]*)")
_COOKIE_PAIR = LazyPattern(r"(?:^|;)[ \t]*(?P<name>[^=;\s]+)=(?P<value>[^;\s]+)")
_COOKIE_ATTRIBUTES = frozenset({"path", "domain", "expires", "max-age", "samesite", "priority", "version", "comment"})


def _text(context: Context, match: re.Match[str], group: str) -> str:
    return context.view[match.start(group) : match.end(group)]


def _url_password(secret: str, match: re.Match[str], context: Context) -> bool:
    from urllib.parse import unquote  # here: urllib.parse costs the hooks' fast path more than all the rules

    plain = unquote(secret)
    return (
        secret != _text(context, match, "user") and not is_placeholder(plain) and (chosen(plain) or not context.is_code)
    )


def _query(secret: str, match: re.Match[str], context: Context) -> bool:
    if not _QUERY_NAME.search(match.group("name").lower()):
        return False
    from urllib.parse import unquote  # here, as in _url_password: only a secret-named query pays for it

    plain = unquote(secret)  # `sig=…%2F…%3D`: a URL-encoded byte is not a `%3` template
    return not is_placeholder(plain, _text(context, match, "name")) and (looks_random(plain) or not context.is_code)


def _header(secret: str, match: re.Match[str], context: Context) -> bool:
    """`X-Api-Key: …`, `PRIVATE-TOKEN: …`: a header name (with a dash) ending in a secret word."""
    start = match.start("tail")
    before = _HEADER_NAME.search(context.view, max(0, start - 60), start)
    name = (before.group(0) if before else "") + _text(context, match, "tail")
    if "-" not in name.strip("-") or (before and before.start() and context.view[before.start() - 1] in "_.$"):
        return False
    issued = looks_random(secret) or (len(secret) >= 16 and not context.is_code)  # `id-token: write` is a permission
    return issued and not is_placeholder(secret, name)


def _credential(secret: str, match: re.Match[str], context: Context) -> bool:
    return not is_placeholder(secret)


def _bare_credential(secret: str, match: re.Match[str], context: Context) -> bool:
    """`Authorization: <credential>` without a scheme: only what looks issued, and in code only a quoted literal."""
    quoted = context.view[match.start("cred") - 1] in "\"'"
    return (
        looks_random(secret)
        and not is_expression(secret)
        and not is_placeholder(secret)
        and (quoted or not context.is_code)
    )


def _flag(secret: str, match: re.Match[str], context: Context) -> bool:
    # `--token TOKEN` and `--password -` name the value; they do not hold it
    if re.fullmatch(r"[A-Z_]+|-.*", secret) or is_placeholder(secret):
        return False
    return looks_random(secret) or not context.is_code


def _cookies(context: Context) -> Iterator[Found]:
    """Values of Cookie and Set-Cookie pairs that look issued (16+ characters, letters and digits)."""
    for header in _COOKIE_HEADER.finditer(context.low or context.view.lower()):
        if header.start() and not (
            context.view[header.start() - 1].isspace() or context.view[header.start() - 1] in "\"'`-"
        ):
            continue
        offset = header.start("value")
        for pair in _COOKIE_PAIR.finditer(context.view[offset : header.end("value")]):
            value = pair.group("value")
            if (
                pair.group("name").lower() not in _COOKIE_ATTRIBUTES
                and len(value) >= 16
                and looks_random(value)
                and not is_placeholder(value)
            ):
                yield offset + pair.start("value"), offset + pair.end("value"), "cookie"


WEB_RULES: list[Rule] = [
    pattern_rule("url_password", ("://",), _URL_PASSWORD, "pw", _url_password),
    pattern_rule("url_secret", ("pass", "secret", "token", "key", "sig"), r"\?" + _QUERY, "value", _query, fold=True),
    pattern_rule("url_secret", ("pass", "secret", "token", "key", "sig"), "&" + _QUERY, "value", _query, fold=True),
    pattern_rule(
        "bearer_token",
        ("authorization",),
        _AUTH + r"bearer\s+(?P<cred>[a-z0-9._~+/=-]{8,})",
        "cred",
        _credential,
        fold=True,
    ),
    pattern_rule(
        "basic_auth", ("authorization",), _AUTH + r"basic\s+(?P<cred>[a-z0-9+/=]{8,})", "cred", _credential, fold=True
    ),
    pattern_rule(
        "auth_token",
        ("authorization",),
        _AUTH + _OTHER_SCHEMES + r"[ \t]+(?P<cred>[a-z0-9._~+/=:-]{8,})",
        "cred",
        _credential,
        fold=True,
    ),
    pattern_rule(
        "auth_token", ("authorization",), _AUTH + r"(?P<cred>[a-z0-9._~+/=-]{20,})", "cred", _bare_credential, fold=True
    ),
    pattern_rule("header_secret", ("key",), _HEADER_KEY + _HEADER_VALUE, "value", _header, fold=True),
    pattern_rule("header_secret", ("-token",), "(?P<tail>-token)" + _HEADER_VALUE, "value", _header, fold=True),
    pattern_rule("header_secret", ("-secret",), "(?P<tail>-secret)" + _HEADER_VALUE, "value", _header, fold=True),
    Rule(("cookie",), _cookies),
    pattern_rule("flag_secret", ("--",), _FLAG, "value", _flag, fold=True),
    pattern_rule("flag_secret", ("login", "sshpass", "twine"), _LOGIN_P, "value", _flag),
    pattern_rule("flag_secret", NAME_WORDS, _CONFIG_SET, "value", _flag, fold=True),  # its name holds one
    pattern_rule("flag_secret", ("mysql",), _MYSQL_P, "value", _flag),
    pattern_rule("basic_auth", ("-u",), r"-u(?<![\w-]-u)" + _CURL_USER, "value", _url_password),
    pattern_rule("basic_auth", ("--user",), r"--user(?<![\w-]--user)" + _CURL_USER, "value", _url_password),
]
