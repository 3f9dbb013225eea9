"""How ctxkeep reads a value from its environment variables: one rule per kind of value, the same for the server, the
CLI (`Settings.from_env`) and the hooks (`clients.core.hook_config`), so a variable never means two things.

A value that breaks its rule raises ValueError naming the variable and what to set instead; `Settings` turns it into
InvalidInput, a hook logs it and passes the client's input through. Standard library only (per-event hooks).
"""

from __future__ import annotations

from collections.abc import Mapping

OFF = ("off", "0", "false", "no")
ON = ("on", "1", "true", "yes")


def whole_number(env: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    """`name` as a whole number of at least `minimum` (`default` when unset); ValueError otherwise."""
    raw = env.get(name, str(default)).strip()
    if not raw.isdigit() or int(raw) < minimum:
        raise ValueError(f"{name} must be a whole number of at least {minimum}, not {raw!r}")
    return int(raw)


def seconds(env: Mapping[str, str], name: str, default: float, unit: str = "seconds") -> float:
    """`name` as a number of seconds (or of `unit`), at least 0 (`default` when unset); ValueError otherwise."""
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise ValueError(f"{name} must be a number of {unit} of at least 0, not {raw!r}")
    return value


def switch(env: Mapping[str, str], name: str, default: bool) -> bool:
    """`name` as on or off: a switch on by default is off only when set to off/0/false/no, one off by default is on
    only when set to on/1/true/yes (anything else keeps the default)."""
    raw = env.get(name, "").strip().lower()
    return raw not in OFF if default else raw in ON
