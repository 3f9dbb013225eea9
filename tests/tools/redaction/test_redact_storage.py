"""Redaction down to the file's bytes: realistic secrets put through the real tools never reach the database."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxkeep.models.evidence import EvidenceGetRequest, EvidenceItem
from ctxkeep.tools.evidence import evidence_get, evidence_put
from ctxkeep.tools.scope import Scope
from tests.secret_samples import SECRETS, database_bytes, found_in

pytestmark = pytest.mark.anyio
ALL_SECRETS = [secret for sample in SECRETS for secret in sample.secrets]


async def put_every_sample(scope: Scope, redact: bool) -> None:
    for sample in SECRETS:
        await evidence_put(
            scope, [EvidenceItem(content=sample.text, kind="file", source=f"{sample.name}.env", redact=redact)]
        )
    await evidence_put(
        scope,
        [EvidenceItem(content=f"batch copy\n{sample.text}", title=sample.name, redact=redact) for sample in SECRETS],
    )


async def test_no_realistic_secret_reaches_the_database_bytes(scope: Scope, db_path: Path) -> None:
    await put_every_sample(scope, redact=True)
    assert found_in(database_bytes(db_path), ALL_SECRETS) == []


async def test_the_byte_scan_finds_every_secret_when_redaction_is_off(scope: Scope, db_path: Path) -> None:
    await put_every_sample(scope, redact=False)
    assert found_in(database_bytes(db_path), ALL_SECRETS) == ALL_SECRETS


async def test_a_claude_code_read_of_an_env_file_is_stored_redacted(scope: Scope, db_path: Path) -> None:
    read = "     1→# staging\n     2→DB_PASSWORD=St4ging-Db-Pw!\n     3→SENTRY_DSN=https://4f2a9c1e@o1.ingest.sentry.io/7\n"
    stored = (await evidence_put(scope, [EvidenceItem(content=read, source="Read", title="Read: .env")])).items[0]
    assert stored.redactions == 1
    back = await evidence_get(scope, EvidenceGetRequest(ref=stored.ref))
    assert back.content == read.replace("St4ging-Db-Pw!", "[REDACTED:env_secret]")
    assert b"St4ging-Db-Pw!" not in database_bytes(db_path)
