"""Short text renderings of tool results (the structured content carries everything)."""

from __future__ import annotations

from ctxkeep.models import CheckpointDiffResult, CheckpointListResult, CheckpointSaveResult, VerifyResult
from ctxkeep.models.evidence import EvidenceBatchResult, EvidenceContent, EvidenceSearchResult
from ctxkeep.models.journal import ActionResultResult
from ctxkeep.models.memory import Memory, MemoryForgetResult, MemorySearchResult, MemoryWriteResult


def save(result: CheckpointSaveResult) -> str:
    head = f"saved {result.task_id} v{result.version} (hash {result.hash[:12]})"
    if result.verification.ok:
        return head + "; verification ok"
    return head + f" despite {len(result.verification.violations)} violation(s):\n" + _violations(result)


def _violations(result: CheckpointSaveResult | VerifyResult) -> str:
    violations = result.verification.violations if isinstance(result, CheckpointSaveResult) else result.violations
    return "\n".join(f"{v.rule} | {v.item} | {v.detail}" for v in violations)


def task_list(result: CheckpointListResult) -> str:
    if not result.tasks:
        return "no tasks in this project yet; checkpoint_save starts one"
    return "\n".join(
        f"{t.task_id} v{t.latest_version} ({t.updated_at.isoformat()}): {t.goal[:120]}"
        f" [pending {t.pending}, approvals waiting {t.pending_approvals}]"
        for t in result.tasks
    )


def diff(result: CheckpointDiffResult) -> str:
    marks = {"added": "+", "removed": "-", "changed": "~"}
    lines = [f"{result.task_id} v{result.from_version} -> v{result.to_version}: {len(result.changes)} change(s)"]
    for change in result.changes:
        if change.field == change.item:  # a single-valued field: show old and new
            lines.append(f"~ {change.field}: {change.before!r} -> {change.after!r}")
        else:
            lines.append(f"{marks[change.op]} {change.field}: {change.item}")
    return "\n".join(lines)


def verification(result: VerifyResult) -> str:
    return "ok: no violations" if result.ok else f"{len(result.violations)} violation(s):\n" + _violations(result)


def stored(result: EvidenceBatchResult) -> str:
    """One item: its line and preview. A batch: one line per item (the previews are in the structured result)."""
    lines = []
    for item in result.items:
        note = " (already stored)" if item.deduplicated else ""
        redacted = f", {item.redactions} secret(s) redacted" if item.redactions else ""
        lines.append(f"{item.ref}: {item.lines} lines, {item.tokens} tokens{redacted}{note}")
    if len(result.items) == 1:
        return f"{lines[0]}\n{result.items[0].preview}"
    return "\n".join(lines)


def content(result: EvidenceContent) -> str:
    if result.next is None:
        return result.content
    rest = ", ".join(f"{k}={v!r}" for k, v in result.next.items())
    return result.content + f"\n[more: call evidence_get({rest})]"


def hits(result: EvidenceSearchResult) -> str:
    if not result.hits:
        return "no matches"
    lines = [
        f"{h.rank}. {h.ref} ({h.score:.2f} of the best) {h.title or h.source or h.kind}: {h.snippet}"
        for h in result.hits
    ]
    if result.truncated:
        lines.append("(more hits matched than fit max_tokens: raise it or narrow the query)")
    return "\n".join(lines)


def _memory_line(memory: Memory) -> str:
    return (
        f"{memory.memory_id} [{memory.kind}, {memory.status}] {memory.key}: {memory.content[:200]}"
        f" (v{memory.version}, {memory.age_seconds // 86400} d old, confidence {memory.confidence})"
    )


def memory_written(result: MemoryWriteResult) -> str:
    lines = [("already stored: " if result.deduplicated else "stored: ") + _memory_line(result.memory)]
    if result.redactions:
        lines.append(f"{result.redactions} secret(s) redacted before storing")
    if result.current is None:
        lines.append("no version of this key is in force now (expired, or effective later)")
    if result.conflict is not None:
        lines.append(f"conflict on {result.conflict.key}: {result.conflict.reason}")
    return "\n".join(lines)


def memories(result: MemorySearchResult) -> str:
    lines = [_memory_line(m) for m in result.memories] or ["no memories match"]
    if result.not_shown:
        lines.append(
            f"({result.not_shown} more not shown: superseded, expired or scheduled versions, or over the limit)"
        )
    return "\n".join(lines)


def forgotten(result: MemoryForgetResult) -> str:
    if result.already_forgotten:
        return f"already forgotten: {', '.join(t.memory_id for t in result.forgotten)}"
    lines = [
        f"forgot {', '.join(t.memory_id for t in result.forgotten)}; cleared {result.working_sets_cleared} cached working set(s), "
        f"scrubbed {result.digests_scrubbed} digest(s)"
    ]
    if result.still_quoted_in:
        lines.append(
            "still quoted in records not derived from the memory (evidence: evidence_delete it; checkpoint versions are "
            "immutable: save a new version without the text): " + ", ".join(result.still_quoted_in)
        )
    if not result.wal_cleared:
        lines.append(
            "the write-ahead log could not be truncated now (another reader); old page copies may stay there until the next checkpoint"
        )
    return "\n".join(lines)


def action(result: ActionResultResult) -> str:
    entry = result.entry
    return f"{'recorded' if result.recorded else 'already recorded'}: {entry.idempotency_key} {entry.status}" + (
        f" (external_id {entry.external_id})" if entry.external_id else ""
    )
