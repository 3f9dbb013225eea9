"""What an agent's own summary must keep (the `compress` prompt and compress_history's `summary_request`)."""

from __future__ import annotations

from ctxkeep.models import TaskState


def summary_request_text(task_id: str, state: TaskState | None) -> str:
    lines = [
        "Summarize the part of your history that is about to be compressed, for your future self.",
        '- Keep every negated clause as it is ("must not execute", "不能推荐"): never turn a prohibition into a statement.',
        "- Keep conditions, numbers, ids and amounts exactly; say what was tried, what failed and why.",
        "- Keep pending work pending and open approvals open: write them as such, not as done.",
        f"Then call compress_history with task_id={task_id!r} and summary=<your text>; it is checked against the task's "
        "checkpoint and kept only when nothing is lost.",
    ]
    if state is not None:
        lines.append(f"The summary must state the goal: {state.goal}")
        lines += [f"Keep with its negation: {c}" for c in state.constraints]
        lines += [f"Still pending: {p}" for p in state.pending]
        lines += [f"Still waiting for approval {a.id}: {a.action}" for a in state.approvals if a.status == "pending"]
        lines += [
            f"Copy exactly: {f.key} = {f.value}{' ' + f.unit if f.unit else ''}" for f in state.facts if f.critical
        ]
    return "\n".join(lines)
