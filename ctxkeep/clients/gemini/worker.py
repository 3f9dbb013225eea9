"""`ctxkeep hook gemini worker`: the detached ingest SessionEnd starts (the chat file into records, the task bound and
saved, the history compressed; see `clients.core.ingest`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import IO

from ctxkeep.clients.core import ingest
from ctxkeep.clients.gemini.chat import read_chat
from ctxkeep.clients.gemini.hooks import TASK_PREFIX, chat_file

GEMINI = ingest.Client(
    "Gemini CLI",
    TASK_PREFIX,
    chat_file,
    lambda lines, hook: read_chat(lines, hook.get("cwd") if isinstance(hook.get("cwd"), str) else None),
)


def run_worker(stdin: IO[bytes], env: Mapping[str, str]) -> int:
    return ingest.run_worker(GEMINI, stdin, env)
