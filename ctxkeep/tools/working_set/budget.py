"""Slot budgets of a working set: default shares, hard caps, borrowing for control rules, and shares as ceilings
only when the budget is short.

A slot named in `slot_budgets` gets at most that many tokens (a hard cap). The other slots share
what is left in proportion to their default shares. Control rules (policy, goal, constraints,
pending items, open approvals, next action) may borrow from the flexible unnamed slots, in the
order evidence, history, recent, memory, reserve; they are never cut. The stable slots (state,
memory, history) then share what evidence and recent leave them: each gets all it needs when
their needs fit (`share_out`); only when they do not are the default shares the ceilings.
"""

from __future__ import annotations

from ctxkeep.errors import InvalidInput
from ctxkeep.models.working_set import DEFAULT_SHARES, SLOTS, Slot

DONORS: tuple[Slot, ...] = ("evidence", "history", "recent", "memory", "reserve")
CONTROL_TEXT: dict[Slot, str] = {
    "policy": "the policy text",
    "goal": "the goal, done criteria and constraints",
    "state": "the open side effects, pending items and open approvals (action_result closes a side effect)",
    "next_action": "the next action",
}


def allocate(budget: int, caps: dict[Slot, int]) -> dict[Slot, int]:
    """Tokens per slot: the caps as given, the rest of the budget shared by default shares (rounding down)."""
    rest = budget - sum(caps.values())
    unnamed = [slot for slot in SLOTS if slot not in caps]
    shares = sum(DEFAULT_SHARES[slot] for slot in unnamed)
    allocation: dict[Slot, int] = dict(caps)
    for slot in unnamed:
        allocation[slot] = rest * DEFAULT_SHARES[slot] // shares if shares else 0
    if unnamed:  # what rounding down left over is headroom, so that every token of the budget can be lent
        allocation[unnamed[-1]] += rest - sum(allocation[slot] for slot in unnamed)
    return allocation


def make_room(
    allocation: dict[Slot, int],
    caps: dict[Slot, int],
    slot: Slot,
    needed: int,
    budget: int,
    keep: dict[Slot, int] | None = None,
) -> None:
    """Grow `slot` to `needed` tokens by borrowing from unnamed flexible slots, then from what the other control slots
    hold beyond `keep` (the tokens each of them needs); raises InvalidInput when it cannot."""
    missing = needed - allocation[slot]
    if missing <= 0:
        return
    if slot in caps:
        raise InvalidInput(
            f"slot_budgets['{slot}'] = {caps[slot]} tokens cannot hold {CONTROL_TEXT.get(slot, slot)} "
            f"({needed} tokens), which are never cut; raise that cap to at least {needed} or leave it out"
        )
    spare = {donor: allocation[donor] for donor in DONORS}
    spare.update({other: max(0, allocation[other] - need) for other, need in (keep or {}).items() if other != slot})
    for donor, available in spare.items():
        if donor in caps or missing <= 0:
            continue
        taken = min(missing, available)
        allocation[donor] -= taken
        allocation[slot] += taken
        missing -= taken
    if missing > 0:
        raise InvalidInput(
            f"budget_tokens = {budget} is too small for the task's control rules, which are never cut "
            f"({CONTROL_TEXT.get(slot, slot)} alone need {needed} tokens); send budget_tokens of at least "
            f"{budget + missing}, or lower the caps in slot_budgets"
        )


def check_control_fits(budget: int, costs: dict[Slot, int], caps: dict[Slot, int]) -> None:
    """Raises InvalidInput, naming the smallest budget that works, when the control rules cannot fit at all."""
    for slot, cost in costs.items():
        if slot in caps and caps[slot] < cost:
            raise InvalidInput(
                f"slot_budgets['{slot}'] = {caps[slot]} tokens cannot hold {CONTROL_TEXT.get(slot, slot)} "
                f"({cost} tokens), which are never cut; raise that cap to at least {cost} or leave it out"
            )
    floor = control_floor(costs, caps)
    if floor > budget:
        named = ", ".join(f"{CONTROL_TEXT.get(slot, slot)} {cost}" for slot, cost in costs.items() if cost)
        raise InvalidInput(
            f"budget_tokens = {budget} is too small for this task's control rules, which are never cut "
            f"({named} tokens{', plus the caps in slot_budgets' if caps else ''}); send budget_tokens of at least "
            f"{floor}{', or lower the caps in slot_budgets' if caps else ''}"
        )


def share_out(room: int, demands: dict[Slot, int], floors: dict[Slot, int]) -> dict[Slot, int]:
    """Tokens for each slot of `demands` within `room`: each gets its floor, then all it needs when the needs fit;
    when they do not, room is shared in proportion to the default shares, and what a slot needs less than its part
    goes to the others (the shares are ceilings only while the budget is short). Deterministic, rounding down."""
    given = {slot: min(floors.get(slot, 0), need) for slot, need in demands.items()}
    left = max(0, room - sum(given.values()))
    active = [slot for slot in demands if demands[slot] > given[slot]]
    while left > 0 and active:
        weight = sum(DEFAULT_SHARES[slot] for slot in active) or 1
        parts = {slot: left * DEFAULT_SHARES[slot] // weight for slot in active}
        done = [slot for slot in active if demands[slot] - given[slot] <= parts[slot]]
        if not done:
            for slot in active:
                given[slot] += parts[slot]
            break
        for slot in done:
            left -= demands[slot] - given[slot]
            given[slot] = demands[slot]
        active = [slot for slot in active if slot not in done]
    return given


def control_floor(costs: dict[Slot, int], caps: dict[Slot, int]) -> int:
    """The smallest budget_tokens that holds the control rules (`costs`, per slot) with the caps as sent."""
    return sum(max(cost, caps.get(slot, 0)) for slot, cost in costs.items()) + sum(
        cap for slot, cap in caps.items() if slot not in costs
    )
