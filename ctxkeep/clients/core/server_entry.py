"""What a client's `ctxkeep` server entry does besides running `ctxkeep serve`: the settings install did not write
(`env`, `cwd`, a remote `url`), shown without secrets, and where the server's data really goes.

A committed config file can carry such settings (`env.CTXKEEP_DB=postgresql://…@203.0.113.9`), so install names
them instead of keeping them silently, and the doctor shows, for each registered entry, the database its server
writes to: the entry's own CTXKEEP_DB, else the one it inherits from the client's environment, else the default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ctxkeep.clients.core.checks import Check
from ctxkeep.db_location import is_database_url, shown_location
from ctxkeep.project import default_db_path

_SECRET_NAME = re.compile(r"TOKEN|SECRET|PASS|KEY|AUTH|CREDENTIAL", re.IGNORECASE)
_URL_CREDENTIALS = re.compile(r"^([a-z][a-z0-9+.-]*://)[^/@\s]+@", re.IGNORECASE)
OWN_KEYS = ("command", "args")  # what install writes; `type: stdio` says the same


def shown_value(name: str, value: Any) -> str:
    """A setting's value as doctor and install show it: a database URL without its password, a URL without its
    credentials, a secret-named variable hidden, anything long cut."""
    text = str(value)
    if _SECRET_NAME.search(name):
        return "<hidden>"
    if is_database_url(text):
        return shown_location(text)
    return _URL_CREDENTIALS.sub(r"\1…@", text)[:200]


def foreign_settings(entry: Mapping[str, Any]) -> dict[str, Any]:
    """The entry's settings other than command and args (and a `type` of stdio): what install did not write."""
    return {k: v for k, v in entry.items() if k not in OWN_KEYS and not (k == "type" and v == "stdio")}


def shown_settings(settings: Mapping[str, Any]) -> str:
    """`env.CTXKEEP_DB=postgresql://user@host/db, cwd=/x` for the settings of an entry (secrets hidden)."""
    parts = []
    for key, value in settings.items():
        if isinstance(value, Mapping):
            parts += [f"{key}.{name}={shown_value(name, item)}" for name, item in value.items()]
        else:
            parts.append(f"{key}={shown_value(key, value)}")
    return ", ".join(parts)


def data_check(name: str, entry: Mapping[str, Any], env: Mapping[str, str]) -> Check:
    """Where the server of a registered entry keeps its data (`warn` when not where this shell's ctxkeep does)."""
    here = env.get("CTXKEEP_DB") or str(default_db_path(env))
    if isinstance(entry.get("url"), str):
        return Check(name, "warn", f"a remote server at {shown_value('url', entry['url'])}, not a local ctxkeep")
    own_env = entry.get("env")
    own = own_env.get("CTXKEEP_DB") if isinstance(own_env, Mapping) else None
    if not isinstance(own, str) or not own:
        return Check(
            name,
            "info",
            f"{shown_location(here)} (inherited: CTXKEEP_DB of the client's environment, else the default)",
        )
    if own == here:
        return Check(name, "info", f"{shown_location(own)} (set in the entry's env)")
    return Check(
        name,
        "warn",
        f"{shown_location(own)}, set in the entry's env: not {shown_location(here)}, which this shell's ctxkeep uses "
        "(remove the entry's CTXKEEP_DB unless you meant it)",
    )
