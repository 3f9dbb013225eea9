"""`ctxkeep hook codex worker`: the detached ingest PreCompact starts (the rollout into records, the task bound and
saved, the history compressed; see `clients.core.ingest`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO

from ctxkeep.clients.codex.hooks import TASK_PREFIX, rollout
from ctxkeep.clients.codex.rollout import read_rollout
from ctxkeep.clients.core import ingest

CODEX = ingest.Client("Codex", TASK_PREFIX, rollout, lambda lines, hook: read_rollout(lines))


def run_worker(stdin: IO[bytes], env: Mapping[str, str]) -> int:
    return ingest.run_worker(CODEX, stdin, env)
