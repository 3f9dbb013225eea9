"""compress_history stores no secret in clear: not in the verbatim band, the digest, the offloads or the big history.

Each test plants secrets in a history, compresses it through the real tools on a real SQLite file, then searches
the bytes of the file and its WAL (evidence blobs decompressed) for them. The same scan with redaction off finds
every one, so a scan that sees nothing is not a blind scan.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ctxkeep.models.checkpoint import CheckpointSaveRequest, TaskState
from ctxkeep.models.compress import CompressRequest
from ctxkeep.tools.checkpoint import checkpoint_save
from ctxkeep.tools.compression import compress_history
from ctxkeep.tools.scope import Scope
from tests.secret_samples import JWT, database_bytes, found_in

pytestmark = pytest.mark.anyio

PLANTED = {
    "user": "Pl4nted-Db-9931",
    "command": "plant3d-tok-7720",
    "bearer": JWT,
    "read": "Str1pe-Plant-5542",
    "traceback": "Pl4nt-Url-Pw",
    "assistant": "sk-ant-api03-Pl4ntedKeyPl4ntedKeyPl4ntedKey-0042",
    "recent": "R3cent-Pw-8812",
}
ENV_FILE = "".join(
    f"{i:>6}→{line}\n" for i, line in enumerate(["# prod", f"STRIPE_SECRET={PLANTED['read']}", "PORT=80"], 1)
)


def history() -> list[dict[str, Any]]:
    """An Anthropic-shaped history with a secret in every place a compression stores text from."""
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "Deploy the API to staging"},
        {"role": "user", "content": f"Use DB_PASSWORD={PLANTED['user']} for the staging database"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": f"I will call the API with {PLANTED['assistant']} as the key."},
                {
                    "type": "tool_use",
                    "id": "t1",
                    "name": "Bash",
                    "input": {
                        "command": f"export API_TOKEN={PLANTED['command']} && curl -H 'Authorization: Bearer {JWT}' https://api.acme.io/deploy"
                    },
                },
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "deployed\nexit code 0"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t2", "name": "Read", "input": {"file_path": "/srv/app/.env"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t2", "content": ENV_FILE}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t3", "name": "Bash", "input": {"command": "python migrate.py"}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t3",
                    "is_error": True,
                    "content": 'Traceback (most recent call last):\n  File "migrate.py", line 3\nsqlalchemy.exc.OperationalError: '
                    f"could not connect to postgres://app:{PLANTED['traceback']}@db.internal:5432/prod\nexit code 1",
                }
            ],
        },
    ]
    for i in range(4):
        messages += [
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": f"r{i}", "name": "Bash", "input": {"command": f"pytest -k t{i}"}}
                ],
            },
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"r{i}", "content": f"{i} passed\n" + "ok\n" * 100}],
            },
        ]
    messages.append({"role": "user", "content": f"Also rotate it: REDIS_PASSWORD={PLANTED['recent']}"})
    return messages


async def compress(scope: Scope, messages: list[dict[str, Any]], redact: bool, **options: Any) -> Any:
    request = CompressRequest(messages=messages, task_id="deploy", **{"keep_recent": 3, "shape_window": 2, **options})
    return await compress_history(scope, request, env={}, redact=redact)


async def test_compressing_a_history_stores_no_planted_secret(scope: Scope, db_path: Path) -> None:
    result = await compress(scope, history(), redact=True)
    assert "verbatim: ev_" in result.digest and "Use DB_PASSWORD=[REDACTED:env_secret]" in result.digest
    assert found_in(database_bytes(db_path), list(PLANTED.values())[:-1]) == []


async def test_the_byte_scan_finds_the_planted_secrets_when_redaction_is_off(scope: Scope, db_path: Path) -> None:
    await compress(scope, history(), redact=False)
    assert found_in(database_bytes(db_path), list(PLANTED.values())[:-1]) == list(PLANTED.values())[:-1]


async def test_the_digest_is_redacted_where_it_is_stored_and_returned(scope: Scope) -> None:
    result = await compress(scope, history(), redact=True)
    async with scope.store.snapshot() as tx:
        stored = await tx.digests.get(scope.project, "deploy")
    assert stored is not None and stored.digest == result.digest
    assert found_in(result.digest.encode(), list(PLANTED.values())) == []


async def test_a_history_stored_as_a_ref_holds_no_planted_secret(scope: Scope, db_path: Path) -> None:
    big = history() + [{"role": "assistant", "content": f"note {i} " + "word " * 3_000} for i in range(10)]
    big.append({"role": "user", "content": f"Also rotate it: REDIS_PASSWORD={PLANTED['recent']}"})
    result = await compress(scope, big, redact=True, keep_recent=12)
    assert result.messages_ref is not None
    assert found_in(database_bytes(db_path), list(PLANTED.values())) == []


async def test_an_accepted_summary_is_stored_redacted(scope: Scope, db_path: Path) -> None:
    await checkpoint_save(
        scope, CheckpointSaveRequest(task_id="deploy", state=TaskState(goal="Deploy the API to staging"))
    )
    summary = f"Goal: Deploy the API to staging. The staging DB_PASSWORD={PLANTED['user']} works."
    result = await compress(scope, history(), redact=True, summary=summary)
    assert result.verification is not None and result.verification.ok, result.verification
    async with scope.store.snapshot() as tx:
        stored = await tx.digests.get(scope.project, "deploy")
    assert stored is not None and stored.summary is not None and PLANTED["user"] not in stored.summary
    assert found_in(database_bytes(db_path), [PLANTED["user"]]) == []


async def test_a_claude_code_transcript_read_of_an_env_file_is_stored_redacted(
    scope: Scope, db_path: Path, tmp_path: Path
) -> None:
    records = [{"type": "user", "message": {"role": "user", "content": "Check the config"}}]
    for i in range(6):
        records += [
            {
                "type": "assistant",
                "message": {
                    "id": f"m{i}",
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": f"u{i}", "name": "Read", "input": {"file_path": f"/srv/app{i}/.env"}}
                    ],
                },
            },
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": f"u{i}", "content": ENV_FILE}],
                },
            },
        ]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in records))
    await compress_history(
        scope,
        CompressRequest(transcript_path=str(path), task_id="deploy", keep_recent=2),
        env={"CTXKEEP_ALLOWED_ROOTS": str(tmp_path)},
    )
    assert found_in(database_bytes(db_path), [PLANTED["read"]]) == []
