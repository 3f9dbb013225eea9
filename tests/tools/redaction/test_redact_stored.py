"""One redaction for every stored text field: a secret sent in any field of a checkpoint state, a journal entry, a
memory or an evidence record reaches neither the database (either store), nor `ctxkeep journal`, nor the bundle
`ctxkeep export` writes for git; and redaction keeps verification and idempotency as they were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ctxkeep.models import TaskState
from ctxkeep.storage import Store
from ctxkeep.tools.checkpoint.versions import new_version
from ctxkeep.tools.scope import Scope
from tests.conftest import PROJECT, tool_text
from tests.secret_samples import database_bytes, found_in
from tests.paths import TESTS

pytestmark = pytest.mark.anyio
ROOT = TESTS.parent

GITHUB = "ghp_Zq8vR2mK5wx7Lp4Vn8Rt1Zy6Hb0cD3eF9gHj"
STRIPE = "sk_live_RZIzryAu0gg7JGEuhoAk5zCb"
PASSWORD = "Vq7#pL2x!Rm9sK4w"
URL_PASSWORD = "pg-Pr0d-9x7Lq2"
SLACK = "xoxb-157704848482-5844711774046-r3uTRjjfrMN4H3k7mWFM38mT"
SECRETS = [GITHUB, STRIPE, PASSWORD, URL_PASSWORD, SLACK]


def secret_state() -> dict[str, Any]:
    """A task state with a secret in every kind of text field it has."""
    return {
        "goal": f"Rotate the deploy token {GITHUB} before Friday",
        "done_criteria": [f"the old key {STRIPE} answers 401"],
        "constraints": [f"never print DB_PASSWORD={PASSWORD} in logs"],
        "plan": [f"connect to postgres://app:{URL_PASSWORD}@db.internal:5432/prod"],
        "completed": [f"revoked {SLACK}"],
        "pending": [f"tell CI the new token {GITHUB}"],
        "dropped": [{"kind": "pending", "item": f"reuse {STRIPE}", "reason": f"DB_PASSWORD={PASSWORD} leaked"}],
        "decisions": [f"keep {SLACK} until Monday"],
        "facts": [
            {"key": "deploy token", "value": GITHUB, "unit": f"DB_PASSWORD={PASSWORD}", "source_ref": "mail-1"},
            {
                "key": f"stripe {STRIPE}",
                "value": 184.3,
                "source_ref": f"https://app:{URL_PASSWORD}@db.internal/x",
            },
        ],
        "assumptions": [f"{SLACK} is read-only"],
        "failed_approaches": [{"approach": f"curl -H 'Authorization: Bearer {GITHUB}'", "reason": "401"}],
        "open_questions": [f"who else has {STRIPE}?"],
        "approvals": [
            {
                "id": "rotate-1",
                "action": f"revoke {GITHUB}",
                "target": f"org token {SLACK}",
                "reason": f"DB_PASSWORD={PASSWORD} was in a log",
                "approver": "lead",
            }
        ],
        "verification_state": f"checked with {STRIPE}",
        "next_action": f"export GITHUB_TOKEN={GITHUB} and run the deploy",
        "phase": f"rotation of {SLACK}",
        "evidence_refs": [f"https://app:{URL_PASSWORD}@db.internal/ref"],
        "extra": {"notes": [f"token {GITHUB}", {"nested": f"DB_PASSWORD={PASSWORD}"}], f"key {STRIPE}": 1},
    }


INTENT = {
    "task_id": "rotate",
    "idempotency_key": f"rotate:{GITHUB}:revoke",
    "action": f"revoke {GITHUB}",
    "target": f"https://app:{URL_PASSWORD}@github.example.com/settings/tokens",
    "params_summary": f"DB_PASSWORD={PASSWORD}",
}


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CTXKEEP_DB": str(db), "CTXKEEP_PROJECT": PROJECT}
    return subprocess.run(
        [sys.executable, "-m", "ctxkeep", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )


async def _store_everything(client: Client) -> None:
    saved = await client.call_tool("checkpoint_save", {"task_id": "rotate", "state": secret_state()})
    assert not saved.is_error, tool_text(saved)
    changed = secret_state() | {"goal": f"Rotate the deploy token {SLACK} before Friday"}
    again = await client.call_tool(
        "checkpoint_save",
        {"task_id": "rotate", "state": changed, "goal_change_reason": f"the token is {SLACK}, not the old one"},
    )
    assert not again.is_error and again.structured_content["version"] == 2, tool_text(again)
    intent = await client.call_tool("action_intent", INTENT)
    assert not intent.is_error, tool_text(intent)
    result = await client.call_tool(
        "action_result",
        {
            "idempotency_key": INTENT["idempotency_key"],
            "status": "succeeded",
            "external_id": SLACK,
            "detail": f"revoked; the new one is {STRIPE}",
        },
    )
    assert not result.is_error, tool_text(result)
    memory = await client.call_tool(
        "memory_write",
        {
            "kind": "task_fact",
            "key": f"deploy token {GITHUB}",
            "content": f"the deploy uses DB_PASSWORD={PASSWORD}",
            "task_id": "rotate",
            "source_version": 1,
        },
    )
    assert not memory.is_error, tool_text(memory)
    evidence = await client.call_tool(
        "evidence_put",
        {
            "content": f"log line: token {GITHUB}",
            "source": f"https://app:{URL_PASSWORD}@logs.internal/x",
            "title": f"log of {SLACK}",
            "tags": [f"token-{STRIPE}"],
            "task_id": "rotate",
        },
    )
    assert not evidence.is_error, tool_text(evidence)
    working_set = await client.call_tool("build_working_set", {"task_id": "rotate", "focus": f"revoke {GITHUB} now"})
    assert not working_set.is_error, tool_text(working_set)


async def test_no_stored_field_keeps_a_secret_in_the_database(client: Client, db_path: Path) -> None:
    await _store_everything(client)
    assert found_in(database_bytes(db_path), SECRETS) == []


async def test_the_journal_and_the_exported_bundle_show_no_secret(client: Client, db_path: Path) -> None:
    await _store_everything(client)
    journal = _cli(db_path, "journal")
    assert journal.returncode == 0 and "rotate:[REDACTED:github_token]:revoke" in journal.stdout, journal
    as_json = _cli(db_path, "journal", "--json")
    bundle = _cli(db_path, "export", "rotate")
    assert bundle.returncode == 0 and "[REDACTED:" in bundle.stdout, bundle.stderr
    for shown in (journal.stdout, as_json.stdout, bundle.stdout):
        assert found_in(shown.encode(), SECRETS) == []


async def test_what_the_tools_answer_is_the_redacted_record(client: Client) -> None:
    await _store_everything(client)
    loaded = await client.call_tool("checkpoint_load", {"task_id": "rotate", "format": "json"})
    state = loaded.structured_content["state"]
    assert state["next_action"] == "export GITHUB_TOKEN=[REDACTED:github_token] and run the deploy"
    assert state["facts"][0]["value"] == "[REDACTED:github_token]"
    assert found_in(json.dumps(loaded.structured_content).encode(), SECRETS) == []


async def test_the_same_state_with_its_secrets_is_one_version_and_verifies(client: Client) -> None:
    """Redaction is deterministic: the same state sent again is the same version, and a fact whose (secret) value did
    not change still compares equal, so a strict save passes."""
    first = await client.call_tool("checkpoint_save", {"task_id": "rotate", "state": secret_state()})
    retry = await client.call_tool("checkpoint_save", {"task_id": "rotate", "state": secret_state()})
    assert retry.structured_content["version"] == first.structured_content["version"] == 1
    moved = secret_state() | {"pending": [], "completed": [f"revoked {SLACK}", f"tell CI the new token {GITHUB}"]}
    second = await client.call_tool("checkpoint_save", {"task_id": "rotate", "state": moved, "strict": True})
    assert not second.is_error, tool_text(second)
    assert second.structured_content["version"] == 2 and second.structured_content["verification"]["ok"]


async def test_an_idempotency_key_with_a_secret_stays_one_entry(client: Client) -> None:
    await client.call_tool("checkpoint_save", {"task_id": "rotate", "state": secret_state()})
    first = await client.call_tool("action_intent", INTENT)
    again = await client.call_tool("action_intent", INTENT)
    assert first.structured_content["recorded"] and not again.structured_content["recorded"], tool_text(again)
    key = first.structured_content["entry"]["idempotency_key"]
    assert key == again.structured_content["entry"]["idempotency_key"] == "rotate:[REDACTED:github_token]:revoke"
    done = {"idempotency_key": INTENT["idempotency_key"], "status": "succeeded", "external_id": SLACK}
    closed = await client.call_tool("action_result", done)
    assert not closed.is_error and closed.structured_content["recorded"], tool_text(closed)
    repeated = await client.call_tool("action_result", done)
    assert not repeated.is_error and not repeated.structured_content["recorded"], tool_text(repeated)


async def test_a_memory_key_with_a_secret_is_found_and_forgotten_by_the_key_sent(client: Client) -> None:
    await client.call_tool("checkpoint_save", {"task_id": "rotate", "state": {"goal": "rotate the token"}})
    write = {
        "kind": "task_fact",
        "key": f"token {GITHUB}",
        "content": "rotated",
        "task_id": "rotate",
        "source_version": 1,
    }
    assert not (await client.call_tool("memory_write", write)).is_error
    found = await client.call_tool("memory_search", {"key": f"token {GITHUB}"})
    assert [m["key"] for m in found.structured_content["memories"]] == ["token [REDACTED:github_token]"]
    forgotten = await client.call_tool("memory_forget", {"key": f"token {GITHUB}", "reason": "rotated"})
    assert len(forgotten.structured_content["forgotten"]) == 1, tool_text(forgotten)


async def test_facts_stored_in_clear_before_still_verify_against_the_redacted_state(
    store: Store, client: Client, db_path: Path
) -> None:
    """A version saved before fields were redacted holds its secrets in clear; the same state saved now must not read
    as a changed fact value."""
    state = TaskState.model_validate(secret_state())
    scope = Scope(store=store, project=PROJECT)
    async with store.transaction() as tx:
        await tx.checkpoints.insert(
            PROJECT, new_version(scope, "rotate", None, 0, state.canonical(), "manual", None, None)
        )
    saved = await client.call_tool("checkpoint_save", {"task_id": "rotate", "state": secret_state(), "strict": True})
    assert not saved.is_error, tool_text(saved)
    assert saved.structured_content["version"] == 2 and saved.structured_content["verification"]["ok"]


async def test_fact_keys_that_differ_only_by_a_secret_are_refused_with_what_to_send(client: Client) -> None:
    other = "ghp_Mm3xQ8rT2vL9pK4wZ7nB5cY1dF6gH0jS2aE4"
    facts = [{"key": f"token {GITHUB}", "value": 1}, {"key": f"token {other}", "value": 2}]
    refused = await client.call_tool("checkpoint_save", {"task_id": "rotate", "state": {"goal": "g", "facts": facts}})
    assert refused.is_error
    message = tool_text(refused)
    assert "[REDACTED:…] markers" in message and "facts" in message and "Keep secrets out" in message, message
    assert GITHUB not in message and other not in message and "Traceback" not in message
    fine = await client.call_tool("checkpoint_save", {"task_id": "rotate", "state": {"goal": "g"}})
    assert not fine.is_error and fine.structured_content["version"] == 1
