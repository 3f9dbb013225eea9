"""Secret redaction: each secret shape is replaced by a marker; look-alike ordinary text is left alone."""

from __future__ import annotations

import pytest

from ctxkeep.tools.evidence.redact import redact_secrets

SECRETS = {
    "private_key": ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----", "b3BlbnNzaC1rZXktdjEAAAAA"),
    "aws_access_key_id": ("id AKIAIOSFODNN7EXAMPLE used", "AKIAIOSFODNN7EXAMPLE"),
    "aws_secret_access_key": ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    "github_token": ("token: ghp_0123456789abcdefghijABCDEFGHIJ012345", "ghp_0123456789abcdefghijABCDEFGHIJ012345"),
    "github_pat": ("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"),
    "slack_token": ("SLACK xoxb-123456789012-abcdefghijklmnop", "xoxb-123456789012-abcdefghijklmnop"),
    "openai_key": ("OPENAI sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123456789", "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx0123456789"),
    "anthropic_key": ("key sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz-0123456789", "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz-0123456789"),
    "bearer": ("Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig"),
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


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_secret_shape_is_redacted(name: str) -> None:
    text, secret = SECRETS[name]
    redacted, count = redact_secrets(f"before\n{text}\nafter")
    assert secret not in redacted
    assert count == 1 and "[REDACTED:" in redacted
    assert redacted.startswith("before\n")
    # a key without its END line is redacted to the end of the text; everything else keeps what follows
    assert redacted.endswith("\nafter") != (name == "truncated_pem")


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
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alike_text_is_left_alone(text: str) -> None:
    assert redact_secrets(text) == (text, 0)


def test_redaction_is_idempotent() -> None:
    once, count = redact_secrets("DB_PASSWORD=hunter2 and AKIAIOSFODNN7EXAMPLE")
    assert count == 2
    assert redact_secrets(once) == (once, 0)


def test_redaction_is_linear_on_hostile_text() -> None:
    import time

    started = time.perf_counter()
    redact_secrets("-sk-" * 20_000 + " " + "-".join(["kebab"] * 38_000) + " https://example.com/")
    assert time.perf_counter() - started < 2
