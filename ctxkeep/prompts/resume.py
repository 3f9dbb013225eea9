"""The `resume` prompt: a restarted agent's first message, built from the stored checkpoint."""

from __future__ import annotations

from ctxkeep.models import CheckpointLoadResult


def resume_text(loaded: CheckpointLoadResult) -> str:
    """Instructions plus the brief: resume from records, not from memory."""
    return (
        f"You are resuming task {loaded.task_id!r} from its checkpoint v{loaded.version}. "
        "Trust this record over anything you remember. Honour every constraint, do not act on a pending "
        "approval, re-check external state the warnings mention, then continue with the next action. "
        f"When you save again, pass expected_version={loaded.version}.\n\n{loaded.brief}"
    )
