"""Long-term memory: the provenance gate, lifetimes on an injected clock, conflicts by key, search and forget."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from mcp import Client

from ctxkeep.errors import InvalidInput, NotFound, Refused
from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.models.memory import MemoryForgetRequest, MemorySearchRequest, MemoryWriteRequest
from ctxkeep.storage import Store
from ctxkeep.tools.checkpoint.versions import checkpoint_save
from ctxkeep.tools.evidence.records import evidence_put
from ctxkeep.tools.memory.forget import memory_forget
from ctxkeep.tools.memory.records import memory_search, memory_write
from ctxkeep.tools.scope import Scope
from tests.conftest import PROJECT, tool_text

pytestmark = pytest.mark.anyio
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=timezone.utc)


class Clock:
    """An injectable clock the test moves forward (no sleeping)."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **delta: float) -> None:
        self.now += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def timed(store: Store, clock: Clock) -> Scope:
    return Scope(store=store, project=PROJECT, clock=clock)


PREFERENCE = {
    "kind": "user_preference",
    "key": "report-format",
    "content": "Reports as tables, not prose",
    "explicit_confirmation": True,
    "source_message_id": "msg-12",
}
POLICY = {
    "kind": "project_policy",
    "key": "report-format",
    "content": "Reports follow the finance template",
    "review_status": "approved",
    "effective_at": "2026-01-01T00:00:00Z",
    "owner": "finance-lead",
}


async def _task(scope: Scope, task_id: str = "refunds") -> None:
    await checkpoint_save(scope, CheckpointSaveRequest(task_id=task_id, state=TaskState(goal="Refund order 8812")))


async def _receipt(scope: Scope) -> str:
    stored = await evidence_put(scope, [EvidenceItem(content="refund re_77 issued: 184.30 USD", source="billing")])
    return stored.refs[0]


async def _all(scope: Scope, **filters: Any) -> list[Any]:
    return (await memory_search(scope, MemorySearchRequest(include_history=True, **filters))).memories


# --- the gate: every kind with an accepted and a refused write -------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "missing"),
    [
        ({"explicit_confirmation": False}, "explicit_confirmation: true"),
        ({"source_message_id": None}, "source_message_id"),
    ],
)
async def test_a_preference_needs_explicit_confirmation_and_its_message(
    timed: Scope, changes: dict[str, Any], missing: str
) -> None:
    with pytest.raises(Refused, match=missing):
        await memory_write(timed, MemoryWriteRequest(**{**PREFERENCE, **changes}))
    assert await _all(timed) == []
    stored = await memory_write(timed, MemoryWriteRequest(**PREFERENCE))
    assert stored.memory.status == "current" and stored.memory.source.source_message_id == "msg-12"
    assert stored.memory.expires_at == T0 + timedelta(days=180)


async def test_a_task_fact_needs_a_stored_receipt(timed: Scope) -> None:
    fact = {"kind": "task_fact", "key": "order 8812 refund", "content": "Refund re_77 of 184.30 USD was issued"}
    with pytest.raises(Refused, match="a receipt: evidence_ref"):
        await memory_write(timed, MemoryWriteRequest(**fact))
    with pytest.raises(Refused, match="evidence_ref 'ev_0123456789abcdef01234567' is not stored"):
        await memory_write(timed, MemoryWriteRequest(**fact, evidence_ref="ev_0123456789abcdef01234567"))
    with pytest.raises(Refused, match="task_id, the task whose checkpoint"):
        await memory_write(timed, MemoryWriteRequest(**fact, source_version=1))
    with pytest.raises(Refused, match="its source is not stored: no task 'refunds'"):
        await memory_write(timed, MemoryWriteRequest(**fact, task_id="refunds", source_version=1))
    assert await _all(timed) == []

    ref = await _receipt(timed)
    by_receipt = await memory_write(
        timed, MemoryWriteRequest(**fact, evidence_ref=ref[:12])
    )  # a unique prefix is enough
    assert by_receipt.memory.source.evidence_ref == ref  # stored in full
    assert by_receipt.memory.expires_at == T0 + timedelta(days=7)
    await _task(timed)
    by_version = await memory_write(
        timed, MemoryWriteRequest(**{**fact, "key": "order 8812 state"}, task_id="refunds", source_version=1)
    )
    assert (by_version.memory.source.task_id, by_version.memory.source.source_version) == ("refunds", 1)


@pytest.mark.parametrize(
    ("changes", "missing"),
    [
        ({"review_status": "in_review"}, "review_status: 'approved' (it is in_review"),
        ({"review_status": None}, "review_status: 'approved' (it is not given"),
        ({"effective_at": None}, "effective_at"),
        ({"owner": None}, "owner"),
    ],
)
async def test_a_policy_needs_approval_effective_date_and_owner(
    timed: Scope, changes: dict[str, Any], missing: str
) -> None:
    with pytest.raises(Refused, match=f"a project_policy needs .*{re.escape(missing)}"):
        await memory_write(timed, MemoryWriteRequest(**{**POLICY, **changes}))
    assert await _all(timed) == []
    stored = await memory_write(timed, MemoryWriteRequest(**POLICY))
    assert stored.memory.expires_at is None and stored.memory.source.owner == "finance-lead"


async def test_a_skill_needs_the_task_it_was_learned_from(timed: Scope) -> None:
    skill = {"kind": "skill", "key": "refund flow", "content": "Refund through the billing CLI, then mail the receipt"}
    with pytest.raises(Refused, match="task_id \\(the task the skill was learned from\\)"):
        await memory_write(timed, MemoryWriteRequest(**skill))
    with pytest.raises(Refused, match="no task 'refunds'"):
        await memory_write(timed, MemoryWriteRequest(**skill, task_id="refunds"))
    await _task(timed)
    stored = await memory_write(timed, MemoryWriteRequest(**skill, task_id="refunds"))
    assert stored.memory.expires_at == T0 + timedelta(days=90)


@pytest.mark.parametrize(
    "request_fields",
    [
        {"kind": "speculation", "key": "user-dislikes-code", "content": "The user probably dislikes code blocks"},
        {**PREFERENCE, "confidence": 0.3},
    ],
)
async def test_speculation_is_refused_with_the_reason_and_where_to_keep_it(
    timed: Scope, request_fields: dict[str, Any]
) -> None:
    with pytest.raises(Refused) as refused:
        await memory_write(timed, MemoryWriteRequest(**request_fields))
    assert "speculation" in str(refused.value) and "assumptions" in str(refused.value)
    assert await _all(timed) == []


# --- lifetimes, on an injected clock ------------------------------------------------------------------------------


async def test_a_fact_expires_after_its_ttl_and_is_hidden_unless_history_is_asked(timed: Scope, clock: Clock) -> None:
    ref = await _receipt(timed)
    await memory_write(
        timed, MemoryWriteRequest(kind="task_fact", key="refund id", content="The refund id is re_77", evidence_ref=ref)
    )
    clock.advance(days=6, hours=23)
    assert [m.status for m in (await memory_search(timed, MemorySearchRequest(query="refund id"))).memories] == [
        "current"
    ]
    clock.advance(hours=2)
    found = await memory_search(timed, MemorySearchRequest(query="refund id"))
    assert found.memories == [] and found.not_shown == 1
    assert [m.status for m in await _all(timed)] == ["expired"]
    earlier = await memory_search(timed, MemorySearchRequest(query="refund id", as_of=T0 + timedelta(days=1)))
    assert [m.content for m in earlier.memories] == ["The refund id is re_77"]


async def test_lifetimes_are_configurable_per_kind(store: Store, clock: Clock) -> None:
    scope = Scope(store=store, project=PROJECT, clock=clock, memory_ttl_days={"user_preference": 2})
    stored = await memory_write(scope, MemoryWriteRequest(**PREFERENCE))
    assert stored.memory.expires_at == T0 + timedelta(days=2)
    explicit = await memory_write(
        scope, MemoryWriteRequest(**{**PREFERENCE, "key": "tone"}, expires_at=T0 + timedelta(days=400))
    )
    assert explicit.memory.expires_at == T0 + timedelta(days=400)
    with pytest.raises(InvalidInput, match="expires_at .* is not after now"):
        await memory_write(scope, MemoryWriteRequest(**{**PREFERENCE, "key": "x"}, expires_at=T0 - timedelta(days=1)))


# --- conflicts by key -----------------------------------------------------------------------------------------------


async def test_a_newer_preference_replaces_the_older_and_keeps_it_as_history(timed: Scope, clock: Clock) -> None:
    first = await memory_write(timed, MemoryWriteRequest(**PREFERENCE))
    clock.advance(days=1)
    second = await memory_write(
        timed, MemoryWriteRequest(**{**PREFERENCE, "content": "Reports as bullet lists", "source_message_id": "msg-40"})
    )
    assert second.conflict is not None
    assert (second.conflict.previous, second.conflict.current) == (first.memory.memory_id, second.memory.memory_id)
    assert "newer" in second.conflict.reason
    history = await _all(timed, key="REPORT-format")  # keys match like list items: case and spacing do not matter
    assert [(m.version, m.status) for m in history] == [(2, "current"), (1, "superseded")]
    current = await memory_search(timed, MemorySearchRequest(key="report-format"))
    assert [m.content for m in current.memories] == ["Reports as bullet lists"] and current.not_shown == 1


async def test_a_policy_outranks_a_newer_preference_until_it_expires(timed: Scope, clock: Clock) -> None:
    policy = await memory_write(timed, MemoryWriteRequest(**POLICY, expires_at=T0 + timedelta(days=30)))
    preference = await memory_write(timed, MemoryWriteRequest(**PREFERENCE))
    assert preference.conflict is not None and preference.conflict.current == policy.memory.memory_id
    assert "project_policy outranks user_preference" in preference.conflict.reason
    assert preference.memory.status == "superseded" and preference.current.memory_id == policy.memory.memory_id
    clock.advance(days=31)
    now_current = await memory_search(timed, MemorySearchRequest(key="report-format"))
    assert [m.memory_id for m in now_current.memories] == [preference.memory.memory_id]


async def test_a_policy_written_after_a_preference_becomes_current(timed: Scope) -> None:
    preference = await memory_write(timed, MemoryWriteRequest(**PREFERENCE))
    policy = await memory_write(timed, MemoryWriteRequest(**POLICY))
    assert policy.conflict is not None and policy.conflict.previous == preference.memory.memory_id
    assert policy.memory.status == "current" and "outranks" in policy.conflict.reason


async def test_a_policy_not_yet_effective_leaves_the_preference_current(timed: Scope, clock: Clock) -> None:
    await memory_write(timed, MemoryWriteRequest(**PREFERENCE))
    later = await memory_write(timed, MemoryWriteRequest(**{**POLICY, "effective_at": "2026-12-15T00:00:00Z"}))
    assert (
        later.memory.status == "scheduled"
        and later.conflict is not None
        and "takes effect 2026-12-15" in later.conflict.reason
    )
    clock.advance(days=16)
    assert [m.kind for m in (await memory_search(timed, MemorySearchRequest(key="report-format"))).memories] == [
        "project_policy"
    ]


async def test_the_same_write_is_stored_once_and_a_new_source_reconfirms(timed: Scope, clock: Clock) -> None:
    first = await memory_write(timed, MemoryWriteRequest(**PREFERENCE))
    again = await memory_write(timed, MemoryWriteRequest(**PREFERENCE))
    assert again.deduplicated and again.memory.memory_id == first.memory.memory_id
    clock.advance(days=179)
    reconfirmed = await memory_write(timed, MemoryWriteRequest(**{**PREFERENCE, "source_message_id": "msg-900"}))
    assert not reconfirmed.deduplicated and reconfirmed.conflict is None
    assert reconfirmed.memory.expires_at == clock.now + timedelta(days=180)
    assert len(await _all(timed)) == 2


# --- search ---------------------------------------------------------------------------------------------------------


async def test_search_finds_by_words_and_filters_by_kind_and_key(timed: Scope) -> None:
    await _task(timed)
    await memory_write(timed, MemoryWriteRequest(**PREFERENCE))
    await memory_write(
        timed,
        MemoryWriteRequest(
            kind="skill", key="refund flow", content="Refunds go through the billing CLI", task_id="refunds"
        ),
    )
    by_words = await memory_search(timed, MemorySearchRequest(query="how are refunds issued"))
    assert [m.key for m in by_words.memories] == ["refund flow"]
    assert by_words.memories[0].forget == f"memory_forget(memory_id={by_words.memories[0].memory_id!r})"
    assert [m.kind for m in (await memory_search(timed, MemorySearchRequest(kind="user_preference"))).memories] == [
        "user_preference"
    ]
    assert (await memory_search(timed, MemorySearchRequest(query="tables", kind="skill"))).memories == []
    with pytest.raises(InvalidInput, match="no searchable words"):
        await memory_search(timed, MemorySearchRequest(query="the of and"))


# --- forget ---------------------------------------------------------------------------------------------------------


async def test_forgetting_the_current_version_brings_back_the_previous(timed: Scope, clock: Clock) -> None:
    first = await memory_write(timed, MemoryWriteRequest(**PREFERENCE))
    clock.advance(hours=1)
    second = await memory_write(
        timed, MemoryWriteRequest(**{**PREFERENCE, "content": "Reports as bullet lists", "source_message_id": "msg-40"})
    )
    gone = await memory_forget(timed, MemoryForgetRequest(memory_id=second.memory.memory_id, reason="user withdrew it"))
    assert [(t.memory_id, t.kind, t.reason) for t in gone.forgotten] == [
        (second.memory.memory_id, "user_preference", "user withdrew it")
    ]
    assert "bullet" not in gone.model_dump_json()  # a tombstone never holds the content
    assert [m.memory_id for m in (await memory_search(timed, MemorySearchRequest(key="report-format"))).memories] == [
        first.memory.memory_id
    ]
    again = await memory_forget(timed, MemoryForgetRequest(memory_id=second.memory.memory_id))
    assert again.already_forgotten and [t.memory_id for t in again.forgotten] == [second.memory.memory_id]
    newer = await memory_write(
        timed, MemoryWriteRequest(**{**PREFERENCE, "content": "Reports as slides", "source_message_id": "msg-50"})
    )
    assert newer.memory.version == 3  # versions never repeat, so neither do ids


async def test_forgetting_a_key_removes_every_version(timed: Scope) -> None:
    await memory_write(timed, MemoryWriteRequest(**PREFERENCE))
    await memory_write(timed, MemoryWriteRequest(**POLICY))
    gone = await memory_forget(timed, MemoryForgetRequest(key="report-format"))
    assert sorted(t.version for t in gone.forgotten) == [1, 2] and gone.wal_cleared
    assert await _all(timed) == []
    assert (await memory_forget(timed, MemoryForgetRequest(key="Report-Format"))).already_forgotten
    with pytest.raises(NotFound, match="no memory key 'never-written'"):
        await memory_forget(timed, MemoryForgetRequest(key="never-written"))


async def test_forget_reports_records_it_may_not_change(timed: Scope) -> None:
    fact = "Courier Oskarsson delivers to Zanzibar Quay"
    await checkpoint_save(
        timed, CheckpointSaveRequest(task_id="parcels", state=TaskState(goal="Ship parcels", decisions=[fact]))
    )
    stored = await evidence_put(timed, [EvidenceItem(content=f"mail: {fact.lower()}, confirmed", source="mail")])
    await memory_write(
        timed, MemoryWriteRequest(kind="task_fact", key="courier", content=fact, evidence_ref=stored.refs[0])
    )
    gone = await memory_forget(timed, MemoryForgetRequest(key="courier"))
    assert gone.still_quoted_in == sorted(["parcels v1", stored.refs[0]])


# --- through the MCP client -----------------------------------------------------------------------------------------


async def test_memory_tools_through_the_mcp_client(client: Client) -> None:
    refused = await client.call_tool("memory_write", {**PREFERENCE, "explicit_confirmation": False})
    assert refused.is_error and "memory_write refused: a user_preference needs explicit_confirmation" in tool_text(
        refused
    )
    stored = await client.call_tool("memory_write", PREFERENCE)
    memory_id = stored.structured_content["memory"]["memory_id"]
    conflict = await client.call_tool("memory_write", POLICY)
    assert "conflict on report-format" in tool_text(conflict)
    found = await client.call_tool("memory_search", {"query": "report format", "include_history": True})
    assert {m["memory_id"] for m in found.structured_content["memories"]} >= {memory_id}
    gone = await client.call_tool("memory_forget", {"key": "report-format"})
    assert len(gone.structured_content["forgotten"]) == 2
    assert (await client.call_tool("memory_search", {"include_history": True})).structured_content["memories"] == []


# --- found in review ------------------------------------------------------------------------------------------------


async def test_a_policy_dated_before_year_1000_is_stored_and_current(timed: Scope) -> None:
    stored = await memory_write(timed, MemoryWriteRequest(**{**POLICY, "effective_at": "0999-01-01T00:00:00Z"}))
    assert stored.memory.status == "current" and stored.memory.effective_at == datetime(999, 1, 1, tzinfo=timezone.utc)
    assert [m.memory_id for m in (await memory_search(timed, MemorySearchRequest(key="report-format"))).memories] == [
        stored.memory.memory_id
    ]


async def test_a_corrected_date_or_an_expired_retry_is_a_new_version(timed: Scope, clock: Clock) -> None:
    later = await memory_write(timed, MemoryWriteRequest(**{**POLICY, "effective_at": "2027-06-01T00:00:00Z"}))
    assert later.memory.status == "scheduled" and later.current is None
    corrected = await memory_write(timed, MemoryWriteRequest(**POLICY))  # the effective date was wrong
    assert not corrected.deduplicated and corrected.memory.status == "current"
    ref = await _receipt(timed)
    fact = MemoryWriteRequest(kind="task_fact", key="refund id", content="The refund id is re_77", evidence_ref=ref)
    await memory_write(timed, fact)
    clock.advance(days=8)  # the fact expired; its receipt is still in force
    again = await memory_write(timed, fact)
    assert not again.deduplicated and again.memory.status == "current" and again.memory.version == 2


async def test_an_expired_receipt_is_refused_and_a_fact_never_outlives_its_receipt(timed: Scope, clock: Clock) -> None:
    stored = await evidence_put(timed, [EvidenceItem(content="quote valid 2 days", expires_at=T0 + timedelta(days=2))])
    fact = MemoryWriteRequest(
        kind="task_fact", key="quote", content="The quote is 2.15 USD/piece", evidence_ref=stored.refs[0]
    )
    written = await memory_write(timed, fact)
    assert written.memory.expires_at == T0 + timedelta(days=2)  # not the 7-day default
    clock.advance(days=3)
    with pytest.raises(Refused, match=f"the receipt {stored.refs[0]} expired"):
        await memory_write(timed, fact.model_copy(update={"key": "quote again"}))


async def test_secrets_in_a_memory_are_redacted(timed: Scope) -> None:
    secret = "sk-ant-" + "q1w2e3r4" * 4
    stored = await memory_write(
        timed, MemoryWriteRequest(**{**PREFERENCE, "content": f"Use the key {secret} for reports"})
    )
    assert secret not in stored.model_dump_json() and stored.redactions == 1
    assert "[REDACTED:anthropic_key]" in (await _all(timed))[0].content


async def test_searching_as_of_a_past_moment_ignores_later_writes(timed: Scope, clock: Clock) -> None:
    first = await memory_write(timed, MemoryWriteRequest(**PREFERENCE))
    clock.advance(days=2)
    await memory_write(timed, MemoryWriteRequest(**POLICY))
    then = await memory_search(
        timed, MemorySearchRequest(key="report-format", as_of=T0 + timedelta(days=1), include_history=True)
    )
    assert [m.memory_id for m in then.memories] == [first.memory.memory_id]


async def test_lifetimes_count_from_when_a_memory_takes_effect(timed: Scope) -> None:
    later = await memory_write(
        timed, MemoryWriteRequest(**{**PREFERENCE, "key": "tone"}, effective_at=T0 + timedelta(days=200))
    )
    assert later.memory.expires_at == T0 + timedelta(days=380)
    with pytest.raises(InvalidInput, match="is not after effective_at"):
        await memory_write(
            timed,
            MemoryWriteRequest(**{**POLICY, "effective_at": "2027-01-01T00:00:00Z"}, expires_at="2026-12-31T00:00:00Z"),
        )


def test_a_lifetime_setting_is_bounded() -> None:
    from ctxkeep.settings import Settings

    with pytest.raises(InvalidInput, match="at most 36500 days"):
        Settings.from_env({"CTXKEEP_DB": "/tmp/x.db", "CTXKEEP_PROJECT": "/p", "CTXKEEP_TTL_TASK_FACT_DAYS": "3000000"})
    assert (
        Settings.from_env(
            {"CTXKEEP_DB": "/tmp/x.db", "CTXKEEP_PROJECT": "/p", "CTXKEEP_TTL_SKILL_DAYS": "none"}
        ).memory_ttl_days["skill"]
        is None
    )


async def test_forget_scrubs_whole_words_in_digests_written_since_the_memory(timed: Scope, clock: Clock) -> None:
    from ctxkeep.storage import DigestRow

    async with timed.store.transaction() as tx:
        await tx.digests.put(
            PROJECT,
            DigestRow("old", "Art of the start: art class on Tuesday", None, "s", "2026-11-01T00:00:00.000000Z"),
        )
    await memory_write(timed, MemoryWriteRequest(**{**PREFERENCE, "key": "hobby", "content": "art"}))
    clock.advance(hours=1)
    async with timed.store.transaction() as tx:
        await tx.digests.put(
            PROJECT,
            DigestRow(
                "new",
                "Started the art class; the cart departs",
                "Summary: art, then start",
                "s",
                "2026-11-30T13:00:00.000000Z",
            ),
        )
    gone = await memory_forget(timed, MemoryForgetRequest(key="hobby"))
    assert gone.digests_scrubbed == 1
    async with timed.store.snapshot() as tx:
        old, new = await tx.digests.get(PROJECT, "old"), await tx.digests.get(PROJECT, "new")
    assert (
        old is not None and old.digest == "Art of the start: art class on Tuesday"
    )  # written before the memory existed
    assert new is not None and new.digest == "Started the [forgotten memory] class; the cart departs"
    assert new.summary == "Summary: [forgotten memory], then start"
