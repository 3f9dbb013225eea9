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


# A key's base64 lines (and its Proc-Type/DEK-Info headers), then its END line; a key cut short (`head id_rsa`)
# loses the lines it has. Constants naming the BEGIN line (`b"-----BEGIN OPENSSH PRIVATE KEY-----"`) hold no key.
_PEM = (
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----(?:\s*(?:[A-Za-z][\w-]*:[ \t][^\n]*|[A-Za-z0-9+/=]{16,}))+"
    r"(?:\s*[A-Za-z0-9+/=]{1,15}(?=\s*-----END))?(?:\s*-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----)?"
)

PROVIDER_RULES: list[Rule] = [
    pattern_rule("private_key", ("PRIVATE KEY",), _PEM),
    pattern_rule(
        "jwt", ("eyJ",), r"eyJ(?<!\weyJ)[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*", accept=_issued
    ),
    pattern_rule("anthropic_key", ("sk-",), r"sk-ant-(?<!\wsk-ant-)[A-Za-z0-9_-]{20,}", accept=_issued),
    pattern_rule("openai_key", ("sk-",), r"sk-(?<!\wsk-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}", accept=_openai),
    pattern_rule(
        "stripe_key",
        (r"k_(?:live|test)_", "whsec_"),
        r"(?<![\w])(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|whsec_[A-Za-z0-9]{24,})",
        accept=_issued,
    ),
    pattern_rule("google_api_key", ("AIza",), r"AIza(?<!\wAIza)[0-9A-Za-z_-]{35}", accept=_issued),
    pattern_rule(
        "github_token",
        (r"gh[pousr]_", "github_pat_"),
        r"g(?<!\wg)(?:h[pousr]_[A-Za-z0-9]{36,255}|ithub_pat_[A-Za-z0-9_]{22,255})\b",
        accept=_issued,
    ),
    pattern_rule(
        "gitlab_token",
        (r"gl(?:pat|dt|rt|ptt|ft|imt|oas|soat|cbt|agent)-",),
        r"gl(?<!\wgl)(?:pat|dt|rt|ptt|ft|imt|oas|soat|cbt|agent)-[A-Za-z0-9_-]{20,}",
        accept=_issued,
    ),
    pattern_rule("npm_token", ("npm_",), r"npm_(?<!\wnpm_)[A-Za-z0-9]{36}\b", accept=_issued),
    pattern_rule("pypi_token", ("pypi-AgE",), r"pypi-AgE(?<!\wpypi-AgE)[A-Za-z0-9_-]{50,}", accept=_issued),
    pattern_rule("huggingface_token", ("hf_",), r"hf_(?<!\whf_)[A-Za-z0-9]{30,40}\b", accept=_mixed_case),
    pattern_rule("sendgrid_key", (r"SG\.",), r"SG\.(?<!\wSG\.)[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b", accept=_issued),
    pattern_rule("slack_token", (r"x(?:ox|app-)",), r"x(?<!\wx)(?:ox[abposr]|app)-[A-Za-z0-9-]{10,}", accept=_issued),
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
        r"A(?<!\wA)(?:KIA|SIA|GPA|IDA|ROA|NPA|NVA|IPA)[0-9A-Z]{16}\b",
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
