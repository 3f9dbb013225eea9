"""Slot budgets of a working set: default shares, hard caps, and borrowing for control rules.

A slot named in `slot_budgets` gets exactly that many tokens (a hard cap). The other slots share
what is left in proportion to their default shares. Control rules (policy, goal, constraints,
pending items, open approvals, next action) may borrow from the flexible unnamed slots, in the
order evidence, history, recent, memory, reserve; they are never cut.
"""

from __future__ import annotations

from ctxkeep.errors import InvalidInput
from ctxkeep.models.working_set import DEFAULT_SHARES, SLOTS, Slot

DONORS: tuple[Slot, ...] = ("evidence", "history", "recent", "memory", "reserve")
CONTROL_TEXT: dict[Slot, str] = {
    "policy": "the policy text", "goal": "the goal, done criteria and constraints",
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
    return allocation


def make_room(allocation: dict[Slot, int], caps: dict[Slot, int], slot: Slot, needed: int, budget: int) -> None:
    """Grow `slot` to `needed` tokens by borrowing from unnamed flexible slots; raises InvalidInput when it cannot."""
    missing = needed - allocation[slot]
    if missing <= 0:
        return
    if slot in caps:
        raise InvalidInput(f"slot_budgets['{slot}'] = {caps[slot]} tokens cannot hold {CONTROL_TEXT.get(slot, slot)} "
                           f"({needed} tokens), which are never cut; raise that cap to at least {needed} or leave it out")
    for donor in DONORS:
        if donor in caps or missing <= 0:
            continue
        taken = min(missing, allocation[donor])
        allocation[donor] -= taken
        allocation[slot] += taken
        missing -= taken
    if missing > 0:
        raise InvalidInput(f"budget_tokens = {budget} is too small for the task's control rules, which are never cut "
                           f"({CONTROL_TEXT.get(slot, slot)} alone need {needed} tokens); send budget_tokens of at least "
                           f"{budget + missing}, or lower the caps in slot_budgets")
