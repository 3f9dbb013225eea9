"""How an evidence ref is formed: the same ref for the same record, whoever stores it (the evidence store, or a hook
that offloads a tool output before the store takes it in). Standard library only."""

from __future__ import annotations

import hashlib

REF_CHARS = 27  # "ev_" + 24 hex digits
MIN_PREFIX_CHARS = 9  # "ev_" + 6 hex digits


def evidence_ref(
    project: str, sha256: str, kind: str, source: str | None, title: str | None, task_id: str | None
) -> str:
    """The ref of a record: its project, content (sha256), kind, source, title and task."""
    identity = "\0".join([project, sha256, kind, source or "", title or "", task_id or ""])
    return "ev_" + hashlib.sha256(identity.encode("utf-8")).hexdigest()[:24]
