"""Settings: read from the environment in one place and passed down explicitly; the stderr log format."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pydantic import Field, model_validator

from ctxkeep.db_location import DEFAULT_DB_TIMEOUT_MS, LocationError, database_location, is_database_url
from ctxkeep.environment import whole_number
from ctxkeep.errors import InvalidInput
from ctxkeep.models.common import DEFAULT_TTL_DAYS, MAX_EVIDENCE_BYTES, Model
from ctxkeep.project import default_db_path, resolve_project, spool_path


def _whole_number(env: Mapping[str, str], name: str, default: int, minimum: int = 0) -> int:
    try:
        return whole_number(env, name, default, minimum)
    except ValueError as exc:
        raise InvalidInput(str(exc)) from None


MAX_TTL_DAYS = 36_500


def _ttl_days(env: Mapping[str, str]) -> dict[str, int | None]:
    """Each memory kind's default lifetime from CTXKEEP_TTL_<KIND>_DAYS: a whole number of days, or 'none'."""
    ttl: dict[str, int | None] = {}
    for kind, default in DEFAULT_TTL_DAYS.items():
        name = f"CTXKEEP_TTL_{kind.upper()}_DAYS"
        raw = env.get(name)
        if raw is not None and raw.strip().lower() == "none" or raw is None and default is None:
            ttl[kind] = None
        else:
            days = _whole_number(env, name, default or 1, minimum=1)
            if days > MAX_TTL_DAYS:
                raise InvalidInput(f"{name} must be at most {MAX_TTL_DAYS} days (100 years), or 'none' for no expiry")
            ttl[kind] = days
    return ttl


class Settings(Model):
    """Everything configurable, with the environment variable that sets it."""

    db_path: Path = Field(
        description="SQLite file (CTXKEEP_DB); default in the user data directory. With a PostgreSQL "
        "database, the local file whose folder holds the hook log, the hooks' spool and the HTTP token."
    )
    db_url: str | None = Field(
        default=None, description="A PostgreSQL database (CTXKEEP_DB=postgresql://…) instead of the file."
    )
    project: str = Field(description="Project key (CTXKEEP_PROJECT > CLAUDE_PROJECT_DIR > cwd, then git top-level).")
    busy_timeout_ms: int = Field(
        default=5_000, ge=0, description="How long a write waits for another writer (CTXKEEP_BUSY_TIMEOUT_MS)."
    )
    db_timeout_ms: int = Field(
        default=DEFAULT_DB_TIMEOUT_MS,
        ge=100,
        description="With PostgreSQL, how long one statement, one wait for a pooled connection and one connection "
        "attempt may take before the call fails saying the database is slow or unreachable (CTXKEEP_DB_TIMEOUT_MS).",
    )
    log_level: str = Field(default="WARNING", description="stderr log level (CTXKEEP_LOG_LEVEL).")
    max_evidence_bytes: int = Field(
        default=MAX_EVIDENCE_BYTES,
        ge=1,
        description="Largest evidence item in UTF-8 bytes (CTXKEEP_MAX_EVIDENCE_BYTES).",
    )
    client_session: str | None = Field(
        default=None,
        description="The client session that started this server "
        "(CLAUDE_CODE_SESSION_ID, set by Claude Code): prompts with no task named pick its task.",
    )
    max_request_bytes: int = Field(
        default=72 * 1024 * 1024,
        ge=1024,
        description="Largest request over stdio (CTXKEEP_MAX_REQUEST_BYTES): "
        "room for a 64 MiB evidence batch and its JSON escapes.",
    )
    memory_ttl_days: dict[str, int | None] = Field(
        default_factory=lambda: dict(DEFAULT_TTL_DAYS),
        description="Default lifetime of each memory kind (CTXKEEP_TTL_<KIND>_DAYS, a number or 'none').",
    )

    @model_validator(mode="before")
    @classmethod
    def _url_as_db_path(cls, data: object) -> object:
        """A postgresql:// URL given as `db_path` (as CTXKEEP_DB may be) selects the PostgreSQL store; the local files
        then live in the default data folder."""
        if isinstance(data, dict) and is_database_url(str(data.get("db_path", ""))) and not data.get("db_url"):
            data = {**data, "db_url": str(data["db_path"]), "db_path": default_db_path(os.environ)}
        return data

    @property
    def location(self) -> Path | str:
        """What `open_store` takes: the PostgreSQL URL, else the SQLite file."""
        return self.db_url or self.db_path

    @property
    def spool_path(self) -> Path | None:
        """With a PostgreSQL store: the local SQLite file the hooks write (their records, offloads, summaries), which
        the heavy side moves into the shared store (`ctxkeep.project.spool_path`); None for an SQLite store."""
        return spool_path(self.db_url, self.db_path.parent) if self.db_url else None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, hook_cwd: str | None = None) -> Settings:
        env = os.environ if env is None else env
        try:
            location = database_location(env.get("CTXKEEP_DB"), default_db_path(env))
        except LocationError as exc:
            raise InvalidInput(str(exc)) from None
        return cls(
            db_path=location if isinstance(location, Path) else default_db_path(env),
            db_url=location if isinstance(location, str) else None,
            project=resolve_project(env, hook_cwd=hook_cwd),
            busy_timeout_ms=_whole_number(env, "CTXKEEP_BUSY_TIMEOUT_MS", 5_000),
            db_timeout_ms=_whole_number(env, "CTXKEEP_DB_TIMEOUT_MS", DEFAULT_DB_TIMEOUT_MS, minimum=100),
            max_evidence_bytes=_whole_number(env, "CTXKEEP_MAX_EVIDENCE_BYTES", MAX_EVIDENCE_BYTES, minimum=1),
            log_level=env.get("CTXKEEP_LOG_LEVEL", "WARNING").upper(),
            memory_ttl_days=_ttl_days(env),
            max_request_bytes=_whole_number(env, "CTXKEEP_MAX_REQUEST_BYTES", 72 * 1024 * 1024, minimum=1024),
            client_session=(env.get("CLAUDE_CODE_SESSION_ID") or "").strip()[:150] or None,
        )


class _OneLine(logging.Formatter):
    """A record as one plain line: its time, level and logger, then the message with line breaks (a traceback's too)
    escaped, never wrapped or coloured."""

    def format(self, record: logging.LogRecord) -> str:
        return super().format(record).replace("\r", "\\r").replace("\n", "\\n")


def configure_logging(level: str) -> None:
    """Log to stderr one plain line per record (stdout carries the protocol). Installed before the MCP SDK configures
    logging, whose rich handler wraps lines at the terminal width (80 columns when stderr is a pipe); calling it again
    only changes the level."""
    root = logging.getLogger()
    root.setLevel(level)
    if not any(getattr(handler, "ctxkeep", False) for handler in root.handlers):
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_OneLine("%(asctime)s %(levelname)s %(name)s: %(message)s", "%Y-%m-%dT%H:%M:%S"))
        handler.ctxkeep = True  # type: ignore[attr-defined]
        root.addHandler(handler)
