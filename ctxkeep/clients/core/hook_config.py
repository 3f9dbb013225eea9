"""What a hook process reads from its environment, read once when it starts (`hook_config`) and passed down.

The variables a hook reads, and where:
- CTXKEEP_DB: the database file (with a PostgreSQL URL, the hooks' spool in the data folder; `project.hook_db_path`),
  refused when it names no database location (`db_location.database_location`);
- CTXKEEP_HOOK_LOG: the hook log (default beside that file; in the default data folder when CTXKEEP_DB is refused);
- CTXKEEP_BUSY_TIMEOUT_MS: how long a write waits for another writer (a whole number, as for the server);
- CTXKEEP_GATE: the verification gate at a stop (on unless off/0/false/no);
- CTXKEEP_SHAPE, CTXKEEP_SHAPE_READ, CTXKEEP_SHAPE_LIMITS: tool-output shaping (`shaping.shaping_from_env`);
- CTXKEEP_WORKER_WAIT_S: how long a session start waits for the detached ingest (seconds, default 10);
- CTXKEEP_START_BRIEF: a new session's brief of where the project's work stopped (on unless off/0/false/no), and
  CTXKEEP_START_BRIEF_DAYS: how recent that work must be (days, default 14);
- CTXKEEP_COMPACT_BRIEF: what a pre-compaction hook tells the client's summarizer to keep (on unless off);
- CTXKEEP_PROJECT, CLAUDE_PROJECT_DIR (with the input's cwd: the project, `project.resolve_project`), and
  CTXKEEP_ALLOWED_ROOTS (`project.transcript_roots`), read with the hook input;
- the clients' own folders (HOME, CLAUDE_CONFIG_DIR, CODEX_HOME), read by each client's adapter from `env`.
A value that breaks its rule (`ctxkeep.environment`) raises ValueError naming the variable: the hook logs it and
passes the client's input through, as the server refuses to start with the same message.
Standard library only (per-event hooks).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from ctxkeep.clients.core.shaping import Shaping, shaping_from_env
from ctxkeep.environment import seconds, switch, whole_number
from ctxkeep.db_location import LocationError
from ctxkeep.project import default_db_file, hook_db_path

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from ctxkeep.named_tuple import NamedTuple

LOG_NAME = "ctxkeep-hooks.log"
BUSY_TIMEOUT_MS = 5_000
WORKER_WAIT_S = 10.0
START_BRIEF_DAYS = 14.0


class HookConfig(NamedTuple):
    """A hook's settings; `env` is kept for the client adapters (their folders) and the detached worker."""

    env: Mapping[str, str]
    db: str
    log: str
    busy_timeout_ms: int
    gate: bool
    shaping: Shaping
    worker_wait_s: float
    start_brief: bool = True
    start_brief_days: float = START_BRIEF_DAYS
    compact_brief: bool = True


def log_path(env: Mapping[str, str]) -> str:
    """CTXKEEP_HOOK_LOG, else `ctxkeep-hooks.log` beside the database (with a PostgreSQL URL: beside the hooks' spool,
    in the data folder)."""
    if env.get("CTXKEEP_HOOK_LOG"):
        return os.path.expanduser(env["CTXKEEP_HOOK_LOG"])
    try:
        return os.path.join(os.path.dirname(hook_db_path(env)), LOG_NAME)
    except LocationError:  # a wrong CTXKEEP_DB: the line that says so goes to the default data folder
        return os.path.join(os.path.dirname(default_db_file(env)), LOG_NAME)


def hook_config(env: Mapping[str, str]) -> HookConfig:
    """The environment read once; ValueError for a value that breaks its rule."""
    return HookConfig(
        env,
        hook_db_path(env),
        log_path(env),
        whole_number(env, "CTXKEEP_BUSY_TIMEOUT_MS", BUSY_TIMEOUT_MS),
        switch(env, "CTXKEEP_GATE", True),
        shaping_from_env(env),
        seconds(env, "CTXKEEP_WORKER_WAIT_S", WORKER_WAIT_S),
        switch(env, "CTXKEEP_START_BRIEF", True),
        seconds(env, "CTXKEEP_START_BRIEF_DAYS", START_BRIEF_DAYS, unit="days"),
        switch(env, "CTXKEEP_COMPACT_BRIEF", True),
    )
