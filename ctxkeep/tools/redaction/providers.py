"""Secrets in the formats providers issue: recognised wherever they appear, by their prefix and shape.

Masked and documentation keys (`ghp_xxxx…`, AWS's `AKIAIOSFODNN7EXAMPLE`, `sk-...`) are left alone.
"""

from __future__ import annotations

import re

from ctxkeep.text import LazyPattern
from ctxkeep.tools.redaction.rules import Context, Rule, pattern_rule

_MASKED = LazyPattern(r"EXAMPLE|[xX]{4,}|\*{3,}|\.{3}|0{8,}")


def _issued(secret: str, match: re.Match[str], context: Context) -> bool:
    return _MASKED.search(secret) is None


def _openai(secret: str, match: re.Match[str], context: Context) -> bool:
    # "sk-learn-style-names" hold no digits; real keys always do
    return (
        _issued(secret, match, context) and bool(re.search(r"\d", secret)) and bool(re.search(r"[A-Za-z]", secret[3:]))
    )


def _mixed_case(secret: str, match: re.Match[str], context: Context) -> bool:
    return _issued(secret, match, context) and secret != secret.lower() and secret != secret.upper()


def _starts(prefix: str) -> str:
    """`prefix` (a fixed-width pattern, written first so the engine finds it fast) where a token starts: not after a
    word character, except after a URL-encoded byte (`token%3Dghp_…`, `%22sk-…`)."""
    return f"{prefix}(?:(?<!\\w{prefix})|(?<=%[0-9A-Fa-f]{{2}}{prefix}))"


def _docker_auth(secret: str, match: re.Match[str], context: Context) -> bool:
    """A Docker config's `auth` is base64 of `user:password`; other `auth` strings (`"auth": "oauth2"`) are not."""
    import binascii

    try:
        decoded = binascii.a2b_base64(secret)
    except (binascii.Error, ValueError):
        return False
    user, colon, password = decoded.partition(b":")
    return bool(colon and user and len(password) >= 4) and decoded.isascii()


# A key's base64 lines (and its Proc-Type/DEK-Info headers), then its END line; a key cut short (`head id_rsa`)
# loses the lines it has. Constants naming the BEGIN line (`b"-----BEGIN OPENSSH PRIVATE KEY-----"`) hold no key.
_PEM = (
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:\s*(?:[A-Za-z][\w-]*:[ \t][^\n]*|[A-Za-z0-9+/=]{16,}))+"
    r"(?:\s*[A-Za-z0-9+/=]{1,15}(?=\s*-----END))?(?:\s*-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?"
)

PROVIDER_RULES: list[Rule] = [
    pattern_rule("private_key", ("PRIVATE KEY",), _PEM),
    pattern_rule(
        "jwt", ("eyJ",), _starts("eyJ") + r"[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", accept=_issued
    ),
    pattern_rule("anthropic_key", ("sk-",), _starts("sk-ant-") + r"[A-Za-z0-9_-]{20,}", accept=_issued),
    pattern_rule(
        "openai_key", ("sk-",), _starts("sk-") + r"(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", accept=_openai
    ),
    pattern_rule(
        "stripe_key",
        (r"k_(?:live|test)_", "whsec_"),
        r"(?:(?<!\w)|(?<=%[0-9A-Fa-f]{2}))(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})",
        accept=_issued,
    ),
    pattern_rule("google_api_key", ("AIza",), _starts("AIza") + r"[0-9A-Za-z_-]{35}", accept=_issued),
    pattern_rule(
        "github_token",
        (r"gh[pousr]_", "github_pat_"),
        _starts("g") + r"(?:h[pousr]_[A-Za-z0-9]{36,255}|ithub_pat_[A-Za-z0-9_]{22,255})\b",
        accept=_issued,
    ),
    pattern_rule(
        "gitlab_token",
        (r"gl(?:pat|dt|rt|ptt|ft|imt|oas|soat|cbt|agent)-",),
        _starts("gl") + r"(?:pat|dt|rt|ptt|ft|imt|oas|soat|cbt|agent)-[A-Za-z0-9_-]{20,}",
        accept=_issued,
    ),
    pattern_rule("npm_token", ("npm_",), _starts("npm_") + r"[A-Za-z0-9]{36}\b", accept=_issued),
    pattern_rule("pypi_token", ("pypi-AgE",), _starts("pypi-AgE") + r"[A-Za-z0-9_-]{50,}", accept=_issued),
    pattern_rule("huggingface_token", ("hf_",), _starts("hf_") + r"[A-Za-z0-9]{30,40}\b", accept=_mixed_case),
    pattern_rule(
        "sendgrid_key", (r"SG\.",), _starts(r"SG\.") + r"[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b", accept=_issued
    ),
    pattern_rule(
        "slack_token", (r"x(?:ox|app-)",), _starts("x") + r"(?:ox[abposr]|app)-[A-Za-z0-9-]{10,}", accept=_issued
    ),
    pattern_rule(
        "shopify_token", ("shp(?:at|ss|ca|pa)_",), _starts("shp") + r"(?:at|ss|ca|pa)_[a-fA-F0-9]{32}\b", accept=_issued
    ),
    pattern_rule("vault_token", (r"hv[sbr]\.",), _starts("hv") + r"[sbr]\.[A-Za-z0-9_-]{24,}", accept=_issued),
    pattern_rule("databricks_token", ("dapi",), _starts("dapi") + r"[a-f0-9]{32}(?:-\d+)?\b", accept=_issued),
    pattern_rule(
        "doppler_token",
        (r"dp\.(?:pt|st|sa|ct|scim|audit)\.",),
        _starts("dp") + r"\.(?:pt|st|sa|ct|scim|audit)\.(?:[A-Za-z0-9_-]{1,40}\.)?[A-Za-z0-9]{40,}\b",
        accept=_issued,
    ),
    pattern_rule("linear_key", ("lin_",), _starts("lin_") + r"(?:api|oauth)_[A-Za-z0-9]{40,}\b", accept=_issued),
    pattern_rule(
        "telegram_bot_token",
        (":AA",),
        r"(?:(?<=bot)|(?<![\w:]))\d{5,16}:AA[A-Za-z0-9_-]{33}(?![\w-])",
        accept=_issued,
    ),
    pattern_rule(
        "discord_webhook",
        ("discord",),
        r"discord(?:app)?\.com/api/(?:v\d+/)?webhooks/\d+/(?P<token>[A-Za-z0-9_-]{60,})",
        "token",
        accept=_issued,
    ),
    pattern_rule(
        "docker_auth",
        ('"auth',),
        r'"auth ?"[ \t]*:[ \t]*"(?P<cred>[A-Za-z0-9+/]{8,}={0,2})',
        "cred",
        accept=_docker_auth,
    ),
    pattern_rule(
        "slack_webhook", (r"hooks\.slack\.com",), r"https://hooks\.slack\.com/services/[A-Za-z0-9/]+", accept=_issued
    ),
    pattern_rule(
        "azure_key",
        ("key=",),
        r"key=(?:(?<=accountkey=)(?<!\waccountkey=)|(?<=sharedaccesskey=)(?<!\wsharedaccesskey=))([a-z0-9+/]{20,}={0,2})",
        1,
        accept=_issued,
        fold=True,
    ),
    pattern_rule(
        "aws_access_key_id",
        (r"A(?:KIA|SIA|GPA|IDA|ROA|NPA|NVA|IPA)",),
        _starts("A") + r"(?:KIA|SIA|GPA|IDA|ROA|NPA|NVA|IPA)[0-9A-Z]{16}\b",
        accept=_issued,
    ),
    pattern_rule(
        "aws_secret_access_key",
        ("secret",),
        r"aws(?<!\waws)_?secret_?(?:access_?)?key\b[\"']?\s*[:=]\s*[\"']?([a-z0-9/+=]{40})(?![a-z0-9/+=])",
        1,
        accept=_issued,
        fold=True,
    ),
]
