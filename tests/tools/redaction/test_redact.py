"""Secret redaction: every realistic secret is replaced by a marker; ordinary code and look-alikes are left alone."""

from __future__ import annotations

import re
import time

import pytest

from ctxkeep.tools.redaction.redact import redact_secrets
from tests.secret_samples import ORDINARY, SECRETS, Sample

SHAPES = {
    "private_key": (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
    "aws_access_key_id": ("id AKIACR9POVIODRLA906R used", "AKIACR9POVIODRLA906R"),
    "aws_secret_access_key": (
        "aws_secret_access_key = /5Eg+t6AHzNp+Zd9P2OLPibRiFuy4G4+XXaZEjKl",
        "/5Eg+t6AHzNp+Zd9P2OLPibRiFuy4G4+XXaZEjKl",
    ),
    "github_token": ("token: ghp_0123456789abcdefghijABCDEFGHIJ012345", "ghp_0123456789abcdefghijABCDEFGHIJ012345"),
    "github_pat": (
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
    ),
    "slack_token": ("SLACK xoxb-123456789012-abcdefghijklmnop", "xoxb-123456789012-abcdefghijklmnop"),
    "openai_key": ("OPENAI sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123456789", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123456789"),
    "anthropic_key": (
        "key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz-0123456789",
        "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz-0123456789",
    ),
    "bearer": (
        "Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig",
    ),
    "url_password": ("DATABASE_URL=postgres://app:hunter2secret@db.internal:5432/prod", "hunter2secret"),
    "env_password": ("DB_PASSWORD=correct-horse-battery", "correct-horse-battery"),
    "env_token": ('export GITHUB_TOKEN="abc123def456"', "abc123def456"),
    "env_lowercase": ("db_password: hunter2hunter2", "hunter2hunter2"),
    "json_bearer": ('{"Authorization": "Bearer abcdef1234567890"}', "abcdef1234567890"),
    "basic_auth": ("Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
    "url_empty_user": ("redis://:s3cretpw@cache:6379/0", "s3cretpw"),
    "truncated_pem": ("-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7", "MIIEpAIBAAKCAQEA7"),
    "stripe_key": ("STRIPE sk_live_abcdefghijklmnop1234", "sk_live_abcdefghijklmnop1234"),
    "google_api_key": ("key=AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA1234567890abcdefghijklmnopqrstuv"),
    "slack_app_token": ("xapp-1-A0123-4567890123-abcdef", "xapp-1-A0123-4567890123-abcdef"),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_secret_shape_is_redacted(name: str) -> None:
    text, secret = SHAPES[name]
    redacted, count = redact_secrets(f"before\n{text}\nafter")
    assert secret not in redacted
    assert count == 1 and "[REDACTED:" in redacted
    assert redacted.startswith("before\n")
    # a key without its END line (`head id_rsa`) loses its base64 lines; what follows them stays
    assert redacted.endswith("\nafter")


@pytest.mark.parametrize("sample", SECRETS, ids=[s.name for s in SECRETS])
def test_every_realistic_secret_is_caught_and_its_context_kept(sample: Sample) -> None:
    redacted, count = redact_secrets(sample.text)
    for secret in sample.secrets:
        assert secret not in redacted, redacted
    for kept in sample.kept:
        assert kept in redacted, redacted
    assert count == redacted.count("[REDACTED:") >= 1


@pytest.mark.parametrize("sample", SECRETS, ids=[s.name for s in SECRETS])
def test_secrets_are_caught_inside_a_json_encoded_string(sample: Sample) -> None:
    import json

    encoded = json.dumps({"content": sample.text})
    redacted, _ = redact_secrets(encoded)
    for secret in sample.secrets:
        assert json.dumps(secret)[1:-1] not in redacted, redacted


LOOK_ALIKES = [
    "we use sk-learn for the model",
    "the password is required to log in",
    "Bearer of bad news",
    "PASSWORD_MIN_LENGTH=8",
    "the token count is 4096",
    "AKIA is an AWS key prefix",
    "ghp_short",
    "see https://example.com/path:with:colons@home",
    "Authorization: Basic realm",
    "git@github.com:owner/repo.git",
    "SECRET=$SECRET",
    "PASSWORD=${DB_PASSWORD}",
    "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
    "USE_TOKEN=true",
    "sk-learn-style-names-go-here-and-there",
    "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "AKIAIOSFODNN7EXAMPLE",
    "--token TOKEN  the token to use",
]


@pytest.mark.parametrize("text", LOOK_ALIKES + ORDINARY)
def test_look_alikes_and_ordinary_code_are_left_alone(text: str) -> None:
    assert redact_secrets(text) == (text, 0)


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_code_is_left_alone_after_a_claude_code_read_prefix(text: str) -> None:
    read = f"     1→import os\n     2→{text}\n     3→"
    assert redact_secrets(read) == (read, 0)


def test_markers_keep_their_kind() -> None:
    redacted, _ = redact_secrets("DB_PASSWORD=hunter2hunter2\nhttps://app:pw-9x7q@db.internal/x")
    assert re.findall(r"\[REDACTED:(\w+)\]", redacted) == ["env_secret", "url_password"]


def test_redaction_is_idempotent() -> None:
    text = "\n".join(sample.text for sample in SECRETS)
    once, count = redact_secrets(text)
    assert count >= len(SECRETS)
    assert redact_secrets(once) == (once, 0)


def test_redaction_is_linear_on_hostile_text() -> None:
    hostile = [
        "-sk-" * 20_000 + " " + "-".join(["kebab"] * 38_000) + " https://example.com/",
        "postgres://a:" + "b@" * 50_000,
        "://" * 60_000,
        ("password=" * 30_000) + "x",
        ("eyJabcdefghijk." * 30_000),
        ("token: " + '"' * 60_000),
        "     1→" * 40_000,
        "\\n" * 100_000 + "DB_PASSWORD=x",
        "a" * 200_000 + "password",
        ("Cookie: " + "a=b; " * 40_000),
        "aws configure set " + "a" * 200_000,
        "dp.pt." + "a" * 200_000 + "_",
        ":AA" * 60_000,
        "1" * 200_000 + ":AA",
        '"auth": "' + "A" * 200_000,
        "twine upload " + "x " * 100_000,
    ]
    for text in hostile:
        started = time.process_time()  # this process's CPU time: a loaded machine does not inflate it
        redact_secrets(text)
        assert time.process_time() - started < 2, text[:40]


# One secret-named key per config syntax; each must be redacted wherever its line stands in the file.
CONFIG_LINES = [
    ("PASSWORD=pR0d-9Lx!mQ2v", "pR0d-9Lx!mQ2v"),
    ("TOKEN=tk_8f2c9a1e7b4d6f3a", "tk_8f2c9a1e7b4d6f3a"),
    ("password: y4ml-Top-Pw-31", "y4ml-Top-Pw-31"),
    ("password=1n1-Db-Pw-88", "1n1-Db-Pw-88"),
    ('secret = "t0ml-Secr3t-Value"', "t0ml-Secr3t-Value"),
    ("token: 'yml_7c1e9a4f2b8d'", "yml_7c1e9a4f2b8d"),
    ("passwd = ini-Pw-5x9q", "ini-Pw-5x9q"),
]
PLACES = {
    "first line": "{line}\nHOST=db\n",
    "second line": "HOST=db\n{line}\n",
    "after a blank line": "[db]\n\n{line}\n",
    "after a comment": "# prod\n{line}\n",
    "indented": "db:\n  {line}\n",
    "crlf": "HOST=db\r\n{line}\r\n",
    "read prefix": "     1→HOST=db\n     2→{line}\n",
}


@pytest.mark.parametrize("place", sorted(PLACES))
@pytest.mark.parametrize(("line", "secret"), CONFIG_LINES, ids=[line.split()[0] for line, _ in CONFIG_LINES])
def test_a_secret_named_key_is_redacted_on_any_line(line: str, secret: str, place: str) -> None:
    text = PLACES[place].format(line=line)
    redacted, count = redact_secrets(text)
    assert secret not in redacted, redacted
    assert count == 1, redacted


@pytest.mark.parametrize(
    "token",
    [
        "ghp_f5SALOwsNl05vuX9NobHHMoqcYoLUW5gpVJt",
        "sk-ant-api03-cfy7PxFKI81y-Bx_DI9ufkXQ_xx3OK2RagTeFdchQjuQ",
        "sk_live_RZIzryAu0gg7JGEuhoAk5zCb",
        "xoxb-157704848482-5844711774046-r3uTRjjfrMN4H3k7mWFM38mT",
        "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",
        "AKIACR9POVIODRLA906R",
    ],
)
@pytest.mark.parametrize("around", ["state%3D{}%26x", "%22{}%22", "q=a%20{}"])
def test_a_provider_token_after_a_url_encoded_byte_is_redacted(token: str, around: str) -> None:
    redacted, count = redact_secrets("GET /callback?" + around.format(token))
    assert token not in redacted and count == 1, redacted


def test_redacting_many_texts_at_once_gives_what_each_alone_gives() -> None:
    from ctxkeep.tools.redaction.redact import redact_each

    texts = [sample.text for sample in SECRETS] + ORDINARY + LOOK_ALIKES + ["", "short", "İstanbul DB_PASSWORD=x9"]
    for size in (2, 3, 7, len(texts)):
        for start in range(0, len(texts), size):
            group = texts[start : start + size]
            assert redact_each(group) == [redact_secrets(text) for text in group]
