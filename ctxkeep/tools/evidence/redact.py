"""Secret redaction before storage: what must never sit in a database in clear text.

Each rule replaces only the secret itself with `[REDACTED:<kind>]`, keeping the words around
it (a header name, a URL's user, an env variable's name) so the text stays readable.
Patterns are anchored on the formats providers issue, so ordinary words that merely look
similar ("sk-learn", "Bearer of news", "PASSWORD_MIN_LENGTH=8") are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_ENV_NAME = r"[A-Za-z0-9_]*(?:PASSWORD|PASSWD|PASSPHRASE|SECRET|SECRET_KEY|ACCESS_KEY|API_KEY|APIKEY|TOKEN|PRIVATE_KEY)"
# Values that name a secret without holding one: variables, templates, booleans.
_NOT_A_SECRET = re.compile(r"^(?:\$.*|.*\{\{.*|true|false|yes|no|none|null|0|1|\*+|<[^>]*>|changeme|required)$", re.IGNORECASE)

# (kind, pattern, group holding the secret; 0 = the whole match)
_PATTERNS: list[tuple[str, re.Pattern[str], int]] = [
    # A key without its END line (say, `head id_rsa`) is redacted to the end of the text.
    ("private_key", re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)"), 0),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_-]{20,}"), 0),
    ("openai_key", re.compile(r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}"), 0),
    ("stripe_key", re.compile(r"\b[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"), 0),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), 0),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"), 0),
    ("slack_token", re.compile(r"\bx(?:ox[abposr]|app)-[A-Za-z0-9-]{10,}"), 0),
    ("slack_webhook", re.compile(r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+"), 0),
    ("aws_access_key_id", re.compile(r"\b(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[0-9A-Z]{16}\b"), 0),
    ("aws_secret_access_key", re.compile(
        r"(?i)\baws_?secret_?(?:access_?)?key\b[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"), 1),
    ("bearer_token", re.compile(r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?bearer\s+([A-Za-z0-9._~+/=-]{8,})"), 1),
    ("basic_auth", re.compile(r"(?i)\bauthorization[\"']?\s*[:=]\s*[\"']?basic\s+([A-Za-z0-9+/=]{8,})"), 1),
    ("url_password", re.compile(r"://[^/\s:@]*:([^@\s/]+)@"), 1),
    ("env_secret", re.compile(rf"(?mi)^[ \t]*(?:export[ \t]+)?{_ENV_NAME}[ \t]*[=:][ \t]*[\"']?([^\s\"']+)"), 1),
]


# Substrings one of which a text must contain for a rule to run (case-insensitive for the
# lower-case ones): most texts hold none, and a regex that starts at a word boundary is slow.
_NEEDS: dict[str, tuple[str, ...]] = {
    "private_key": ("PRIVATE KEY",),
    "anthropic_key": ("sk-ant-",),
    "openai_key": ("sk-",),
    "stripe_key": ("k_live_", "k_test_"),
    "google_api_key": ("AIza",),
    "github_token": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    "slack_token": ("xox", "xapp-"),
    "slack_webhook": ("hooks.slack.com",),
    "aws_access_key_id": ("AKIA", "ASIA", "AGPA", "AIDA", "AROA", "ANPA", "ANVA", "AIPA"),
    "aws_secret_access_key": ("secret",),
    "bearer_token": ("bearer",),
    "basic_auth": ("basic",),
    "url_password": ("://",),
    "env_secret": ("password", "passwd", "passphrase", "secret", "access_key", "api_key", "apikey", "token", "private_key"),
}
_RULES = [(kind, pattern, group, _NEEDS[kind]) for kind, pattern, group in _PATTERNS]


def _replacer(kind: str, group: int, counter: list[int]) -> Callable[[re.Match[str]], str]:
    def replace(match: re.Match[str]) -> str:
        secret = match.group(group)
        if "[REDACTED:" in secret or (kind == "env_secret" and _NOT_A_SECRET.match(secret)):
            return match.group(0)
        if kind == "openai_key" and not (re.search(r"\d", secret) and re.search(r"[A-Za-z]", secret[3:])):
            return match.group(0)  # "sk-learn-style-names" hold no digits; real keys always do
        counter[0] += 1
        whole, start, end = match.group(0), match.start(group) - match.start(0), match.end(group) - match.start(0)
        return whole[:start] + f"[REDACTED:{kind}]" + whole[end:]

    return replace


def redact_secrets(text: str) -> tuple[str, int]:
    """The text with every recognised secret replaced by a marker, and how many were replaced."""
    counter = [0]
    lowered = text.lower()
    for kind, pattern, group, needs in _RULES:
        if any(need in (lowered if need.islower() else text) for need in needs):
            text = pattern.sub(_replacer(kind, group, counter), text)
    return text, counter[0]
