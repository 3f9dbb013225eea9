"""Short text renderings of tool results (the structured content carries everything)."""

from __future__ import annotations

from ctxkeep.models import CheckpointDiffResult, CheckpointListResult, CheckpointSaveResult, VerifyResult
from ctxkeep.models.evidence import EvidenceBatchResult, EvidenceContent, EvidenceSearchResult


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
    return "\n".join(f"{h.ref} (score {h.score:.3g}) {h.title or h.source or h.kind}: {h.snippet}" for h in result.hits)
