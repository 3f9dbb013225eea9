"""Task leases: which executor works on a task now, and until when (seed 003's execution-ownership check).

An executor claims a task with an owner id and a lease length, through checkpoint_load or checkpoint_save. While
another owner's lease is live, saves (with or without an owner) and claims are refused with LeaseHeld, naming the
holder and the expiry. An expired lease can be taken over: the version saved by the new owner records the takeover
(`took_over`), and a claim at load appends a `takeover` version of the unchanged state, so the chain says who took
over from whom and when. The lease is read and written under the task's lock (`tx.checkpoints.lock`), together with
the chain append it guards, so two executors racing for one task are serialized: one wins, the other is refused naming
it; other tasks never wait. On a shared server with user tokens the owner is the token's user: a request naming
another owner is refused (not silently replaced, so a caller who meant to act under another's lease learns that it
cannot, rather than finding its save refused for a lease it thought it held).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from ctxkeep.errors import LeaseHeld, Refused
from ctxkeep.models import Lease
from ctxkeep.storage import LeaseRow, Tx
from ctxkeep.text import utc_moment, utc_text
from ctxkeep.tools.scope import Scope

DEFAULT_LEASE_SECONDS = 600


@dataclass(frozen=True)
class Claim:
    """What a claim left: the lease now held (None when released) and the expired lease it replaced, if another's."""

    lease: LeaseRow | None
    took_over: str | None


def _text(moment: datetime) -> str:
    return utc_text(moment) or ""


def live(row: LeaseRow, now: datetime) -> bool:
    return row.expires_at > _text(now)


def check(current: LeaseRow | None, task_id: str, owner: str | None, now: datetime, doing: str = "save") -> None:
    """Raise LeaseHeld when another owner's lease is live (`owner` None: anyone's)."""
    if current is not None and current.owner != owner and live(current, now):
        raise LeaseHeld(task_id, current.owner, current.expires_at, doing)


async def check_free(tx: Tx, scope: Scope, task_id: str, owner: str | None, doing: str = "save") -> LeaseRow | None:
    """The task's lease; raises LeaseHeld when another owner's lease is live (`owner` None: anyone's)."""
    current = await tx.leases.get(scope.project, task_id)
    check(current, task_id, owner, scope.clock(), doing)
    return current


def check_owner(scope: Scope, owner: str, doing: str = "save") -> None:
    """Raise Refused when a shared server's user names an owner other than themselves."""
    if scope.user is not None and owner != scope.user:
        raise Refused(
            f"{doing} refused: on this shared server a lease belongs to the user of your token, {scope.user!r}; send "
            f"owner {scope.user!r} (or no owner), not {owner[:100]!r}"
        )


def planned(
    current: LeaseRow | None, task_id: str, owner: str, seconds: int | None, now: datetime, doing: str = "save"
) -> Claim:
    """What taking, renewing (same owner) or releasing (`seconds` 0) the lease leaves, given the lease there is now;
    raises LeaseHeld while another's is live. Nothing is written."""
    check(current, task_id, owner, now, doing)
    took_over = (
        f"{current.owner} (lease expired {current.expires_at})"
        if current is not None and current.owner != owner
        else None
    )
    if seconds == 0:
        return Claim(None, took_over)
    acquired = current.acquired_at if current is not None and current.owner == owner else _text(now)
    length = DEFAULT_LEASE_SECONDS if seconds is None else seconds
    return Claim(LeaseRow(task_id, owner, acquired, _text(now + timedelta(seconds=length))), took_over)


async def write(tx: Tx, scope: Scope, task_id: str, owner: str, current: LeaseRow | None, claim: Claim) -> None:
    """Write what `planned` decided (inside the transaction that holds the task's lock)."""
    if claim.lease is not None:
        await tx.leases.put(scope.project, claim.lease)
    elif current is not None and current.owner == owner:
        await tx.leases.release(scope.project, task_id, owner)


async def claim(tx: Tx, scope: Scope, task_id: str, owner: str, seconds: int | None, doing: str = "save") -> Claim:
    """Take, renew or release the task's lease; raises LeaseHeld while another's is live (call it holding the task's
    lock: `tx.checkpoints.lock`); Refused when a shared server's user names an owner other than themselves."""
    check_owner(scope, owner, doing)
    current = await tx.leases.get(scope.project, task_id)
    decided = planned(current, task_id, owner, seconds, scope.clock(), doing)
    await write(tx, scope, task_id, owner, current, decided)
    return decided


def as_lease(row: LeaseRow | None, now: datetime) -> Lease | None:
    if row is None:
        return None
    return Lease(
        owner=row.owner,
        acquired_at=utc_moment(row.acquired_at),
        expires_at=utc_moment(row.expires_at),
        live=live(row, now),
    )


def lease_warning(row: LeaseRow | None, now: datetime, owner: str | None) -> str | None:
    """What a resuming agent must know about the lease (None: nothing, or it is the agent's own live lease)."""
    if row is None:
        return None
    if live(row, now):
        if row.owner == owner:
            return None
        return (
            f"task is leased to {row.owner} until {row.expires_at}: another executor is working on it; do not act on it "
            "(saves are refused) until the lease expires"
        )
    return (
        f"the lease of {row.owner} expired at {row.expires_at}: that executor may have stopped; claim the task "
        "(owner, lease_seconds) before working on it"
    )
