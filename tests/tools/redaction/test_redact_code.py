"""Redaction leaves ordinary code alone: an agent that reads a file back through evidence gets the code."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from bench.redaction import corpus_files, scan
from ctxkeep.models.evidence import EvidenceGetRequest, EvidenceItem
from ctxkeep.tools.evidence import evidence_get, evidence_put
from ctxkeep.tools.redaction.redact import redact_secrets
from ctxkeep.tools.scope import Scope

pytestmark = pytest.mark.anyio

# Files of our dependencies that the old rules damaged (identifiers and calls replaced by markers).
DAMAGED_BEFORE = [
    ("mcp", "server/auth/provider.py"),
    ("mcp", "shared/auth.py"),
    ("mcp", "client/auth/oauth2.py"),
    ("pydantic", "networks.py"),
    ("anyio", "from_thread.py"),
    ("rich", "prompt.py"),
    ("pygments", "lexers/ml.py"),
    ("cryptography", "hazmat/primitives/serialization/ssh.py"),
]


def package_file(package: str, relative: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        pytest.skip(f"{package} is not installed")
    return Path(next(iter(spec.submodule_search_locations))) / relative


CODE = """from django import forms
from typing import Optional


class LoginForm(forms.Form):
    username = forms.CharField(max_length=150)
    password = forms.CharField(widget=forms.PasswordInput)


class Client:
    token: Optional[str] = None
    token = Error

    def __init__(self, api_key: str | None = None, password: str = "") -> None:
        api_key = os.environ["KEY"]
        self.password = password
        self.token = token_for(api_key, password=password, secret=self.secret)
"""


def test_the_issues_examples_come_back_unchanged() -> None:
    assert redact_secrets(CODE) == (CODE, 0)
    numbered = "".join(f"{i:>6}→{line}\n" for i, line in enumerate(CODE.splitlines(), 1))
    assert redact_secrets(numbered) == (numbered, 0)


@pytest.mark.parametrize(("package", "relative"), DAMAGED_BEFORE, ids=[f"{p}/{r}" for p, r in DAMAGED_BEFORE])
async def test_a_library_file_comes_back_from_evidence_byte_for_byte(scope: Scope, package: str, relative: str) -> None:
    text = package_file(package, relative).read_text(encoding="utf-8")
    stored = (await evidence_put(scope, [EvidenceItem(content=text, kind="file", source=relative)])).items[0]
    assert stored.redactions == 0
    parts, chunk = [], 0
    while True:
        part = await evidence_get(
            scope, EvidenceGetRequest(ref=stored.ref, mode="chunk", chunk=chunk, max_tokens=25_000)
        )
        parts.append(part.content)
        if part.next is None:
            break
        chunk += 1
    assert "".join(parts) == text


def test_at_most_one_library_file_in_a_thousand_is_changed() -> None:
    files = corpus_files()
    assert len(files) > 1_000, "the corpus is the test venv's site-packages and the TypeScript client's node_modules"
    result = scan(files)
    assert result.changed_share <= 0.001, result.changed_files
