"""The errors ctxkeep raises, each named for the condition a caller can act on.

    CtxkeepError                 base: the message says what was wrong and what to send instead
    ├── InvalidInput             the request is well-formed but unusable (bad combination, bad path)
    ├── NotFound                 a task or version that does not exist in this project
    ├── VersionConflict          `expected_version` is not the task's current version
    ├── CheckpointRefused        a strict save broke verification rules (carries the violations)
    ├── Refused                  a valid request a rule forbids (memory gate, a second journal result)
    │   └── LeaseHeld            another executor's lease on the task is live (names the holder and the expiry)
    └── StorageError             the database cannot serve the request
        ├── SchemaTooNew         the file was written by a newer ctxkeep
        └── DatabaseUnavailable  locked, full, read-only or corrupt; names the file

The MCP adapter turns every CtxkeepError into a tool error with this message; the CLI
turns it into a message on stderr and exit code 1. Anything else is a bug.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py); the hooks raise these too
if TYPE_CHECKING:
    from ctxkeep.models import Violation


class CtxkeepError(Exception):
    """Base class: a failure the caller can fix or retry, described in the message."""


class InvalidInput(CtxkeepError):
    """The request cannot be served as sent; the message says what to send instead."""


class NotFound(CtxkeepError):
    """A task or version that does not exist in this project."""


class VersionConflict(CtxkeepError):
    """Another writer saved first; the message names the task's version now."""

    def __init__(self, task_id: str, expected: int, current: int) -> None:
        super().__init__(
            f"version conflict on task {task_id!r}: expected_version={expected} but the current "
            f"version is {current}. Load version {current} (checkpoint_load), merge your changes "
            f"into it, and save again with expected_version={current}."
        )


class CheckpointRefused(CtxkeepError):
    """A strict checkpoint_save that violates verification rules; nothing was stored."""

    def __init__(self, violations: list[Violation]) -> None:
        self.violations = violations
        lines = [" | ".join(_one_line(part) for part in (v.rule, v.item, v.detail)) for v in violations]
        super().__init__(f"checkpoint_save refused: {len(violations)} violation(s)\n" + "\n".join(lines))


def _one_line(text: str) -> str:
    """A field of a `rule | item | detail` line: no line breaks, no bare separators."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r").replace("|", "\\|")


class Refused(CtxkeepError):
    """The request is well-formed but a rule forbids it (a memory without provenance, a second result); nothing stored."""


class LeaseHeld(Refused):
    """Another owner's lease on the task is live: saving (or claiming it) is refused until it expires."""

    def __init__(self, task_id: str, holder: str, expires_at: str, doing: str = "save") -> None:
        self.holder, self.expires_at = holder, expires_at
        super().__init__(
            f"{doing} refused: task {task_id!r} is leased to {holder!r} until {expires_at} (another executor is working on "
            "it). Do not act on it before then; after that time, claim it with checkpoint_load(task_id, owner, lease_seconds) "
            "and save with the same owner."
        )


class StorageError(CtxkeepError):
    """The database cannot serve the request; stored data is unchanged."""


class SchemaTooNew(StorageError):
    """The database was written by a newer ctxkeep; it is never migrated down."""


class DatabaseUnavailable(StorageError):
    """The database file is locked, full, read-only or corrupt."""
