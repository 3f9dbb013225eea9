"""Resume checks: what a restarted agent must know before acting on a loaded checkpoint.

Besides the checkpoint's own facts (schema, age, pending approvals, strictness) they look at the
records around it: side effects intended without a result, evidence the state cites that expired
or was deleted, and memories the task relied on (cited in the state, or shown in its last working
set) that are no longer current.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ctxkeep.models import STATE_SCHEMA_VERSION, ResumeChecks, TaskState, Violation
from ctxkeep.storage import ActionRow, CheckpointRow, EvidenceRow, LeaseRow, MemoryRow, TombstoneRow, Tx
from ctxkeep.text import utc_text, utc_moment
from ctxkeep.tools.checkpoint.leases import as_lease, lease_warning
from ctxkeep.tools.journal import open_intent_warning, to_action
from ctxkeep.tools.memory import current_by_key, status_of
from ctxkeep.tools.scope import Scope

STALE_AFTER_SECONDS = 24 * 3600
_EVIDENCE_REF = re.compile(r"^ev_[0-9a-f]{6,24}$")  # a full ref, or a unique prefix as working sets show them
_FULL_REF_CHARS = 27
_MEMORY_ID = re.compile(r"^mem_[0-9a-f]{16}$")


@dataclass(frozen=True)
class ResumeRecords:
    """The records a checkpoint's resume checks consult, read in the same snapshot as the checkpoint."""

    open_intents: list[ActionRow]
    cited_refs: list[str]
    evidence: dict[str, EvidenceRow]
    relied_on: list[str]
    memories: list[MemoryRow]
    forgotten: list[TombstoneRow]
    lease: LeaseRow | None = None


def _cited(state: TaskState, pattern: re.Pattern[str]) -> list[str]:
    named = [*state.evidence_refs, *(f.source_ref for f in state.facts if f.source_ref)]
    return sorted({name for name in named if pattern.match(name)})


async def resume_records(tx: Tx, scope: Scope, task_id: str, state: TaskState) -> ResumeRecords:
    """The records around a checkpoint (queries with nothing to look up are skipped: loads are frequent)."""
    cited_refs = _cited(state, _EVIDENCE_REF)
    shown = await tx.working_sets.get(scope.project, task_id)
    relied_on = sorted(set(_cited(state, _MEMORY_ID)) | set(json.loads(shown.memories_json) if shown else []))
    memories: list[MemoryRow] = []
    forgotten: list[TombstoneRow] = []
    if relied_on:
        found = await tx.memories.by_ids(scope.project, relied_on)
        present = {m.memory_id for m in found}
        # the other versions of the same keys decide which one is current
        memories = await tx.memories.versions(scope.project, sorted({m.key_match for m in found})) if found else []
        missing = [m for m in relied_on if m not in present]
        forgotten = await tx.memories.tombstones(scope.project, missing) if missing else []
    return ResumeRecords(
        open_intents=await tx.journal.open_for_task(scope.project, task_id),
        cited_refs=cited_refs,
        evidence=await _cited_evidence(tx, scope, cited_refs),
        relied_on=relied_on,
        memories=memories,
        forgotten=forgotten,
        lease=await tx.leases.get(scope.project, task_id),
    )


async def _cited_evidence(tx: Tx, scope: Scope, cited: list[str]) -> dict[str, EvidenceRow]:
    """The records behind the refs a state cites, by the text it cites (a short ref resolves when it is unique)."""
    full = [ref for ref in cited if len(ref) == _FULL_REF_CHARS]
    found = await tx.evidence.rows(scope.project, full) if full else {}
    for prefix in (ref for ref in cited if len(ref) < _FULL_REF_CHARS):
        matches = await tx.evidence.by_prefix(scope.project, prefix)
        if len(matches) == 1:
            found[prefix] = matches[0]
    return found


def _memory_warnings(records: ResumeRecords, now: str) -> tuple[list[str], list[str]]:
    """(ids no longer current, warnings) for the memories the task relied on."""
    current = current_by_key(records.memories, now)
    by_id = {m.memory_id: m for m in records.memories}
    stale: list[str] = []
    warnings = [
        f"memory {t.memory_id} was forgotten on {t.forgotten_at[:10]}: do not rely on it" for t in records.forgotten
    ]
    stale += [t.memory_id for t in records.forgotten]
    for memory_id in records.relied_on:
        row = by_id.get(memory_id)
        if row is None:
            continue
        status = status_of(row, now, current)
        if status == "expired":
            warnings.append(
                f"memory {memory_id} ({row.key}) expired on {(row.expires_at or '')[:10]}: re-confirm it before relying on it"
            )
        elif status == "superseded":
            warnings.append(
                f"memory {memory_id} ({row.key}) was superseded by {current[row.key_match].memory_id}: use the current one"
            )
        if status in ("expired", "superseded"):
            stale.append(memory_id)
    return sorted(stale), warnings


def resume_checks(
    scope: Scope, row: CheckpointRow, latest: int, state: TaskState, records: ResumeRecords, owner: str | None = None
) -> ResumeChecks:
    """The checks of one loaded version, warnings ordered by what could do harm first (another executor's live lease
    first of all); `owner`: who loads it (their own lease is no warning)."""
    saved_at = utc_moment(row.created_at)
    now = scope.clock()
    now_text = utc_text(now) or ""
    age = max(0, int((now - saved_at).total_seconds()))
    pending = [a for a in state.approvals if a.status == "pending"]
    violations = [Violation.model_validate(v) for v in json.loads(row.violations_json)]
    intents = [to_action(intent) for intent in records.open_intents]
    held = lease_warning(records.lease, now, owner)
    warnings = [held] if held else []
    warnings += [open_intent_warning(intent) for intent in intents]
    warnings += [f"approval {a.id} is pending: do not {a.action} until it is approved" for a in pending]
    expired = [
        ref for ref, ev in sorted(records.evidence.items()) if ev.expires_at is not None and ev.expires_at <= now_text
    ]
    missing = [ref for ref in records.cited_refs if ref not in records.evidence]
    warnings += [f"evidence {ref} expired: fetch the source again before relying on it" for ref in expired]
    warnings += [f"evidence {ref} is no longer stored (deleted): the state cites it" for ref in missing]
    stale_memories, memory_warnings = _memory_warnings(records, now_text)
    warnings += memory_warnings
    if row.version != latest:
        warnings.append(f"this is version {row.version}; the latest is {latest}")
    if violations:
        warnings.append(
            f"saved without strict checks despite {len(violations)} violation(s): {', '.join(sorted({v.rule for v in violations}))}"
        )
    if age > STALE_AFTER_SECONDS:
        warnings.append(f"saved {age // 3600} h ago: re-check external state (files, tickets, orders) before acting")
    return ResumeChecks(
        schema_version=row.state_schema,
        schema_compatible=row.state_schema <= STATE_SCHEMA_VERSION,
        saved_at=saved_at,
        age_seconds=age,
        is_latest=row.version == latest,
        latest_version=latest,
        saved_with_violations=len(violations),
        pending_approvals=pending,
        open_intents=intents,
        evidence_expired=expired,
        evidence_missing=missing,
        memories_expired=stale_memories,
        lease=as_lease(records.lease, now),
        warnings=warnings,
    )
