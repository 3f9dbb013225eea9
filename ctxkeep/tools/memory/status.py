"""Which version of a memory key is in force at a moment: the rule memory_write, memory_search, working sets
and resume checks share (most authoritative kind first, then the newest; expired and not-yet-effective versions
are never current)."""

from __future__ import annotations

from collections.abc import Iterable

from ctxkeep.models.memory import AUTHORITY, MemoryStatus
from ctxkeep.storage import MemoryRow


def in_force(row: MemoryRow, now: str) -> bool:
    """Written by `now`, not expired, already effective."""
    return (
        row.created_at <= now
        and (row.expires_at is None or row.expires_at > now)
        and (row.effective_at is None or row.effective_at <= now)
    )


def current_by_key(rows: Iterable[MemoryRow], now: str) -> dict[str, MemoryRow]:
    """The current version of each key among `rows`: in force, most authoritative kind, then newest."""
    best: dict[str, MemoryRow] = {}
    for row in rows:
        if in_force(row, now):
            held = best.get(row.key_match)
            if held is None or (AUTHORITY[row.kind], row.version) > (AUTHORITY[held.kind], held.version):
                best[row.key_match] = row
    return best


def status_of(row: MemoryRow, now: str, current: dict[str, MemoryRow]) -> MemoryStatus:
    if row.expires_at is not None and row.expires_at <= now:
        return "expired"
    if row.effective_at is not None and row.effective_at > now:
        return "scheduled"
    held = current.get(row.key_match)
    return "current" if held is not None and held.id == row.id else "superseded"
