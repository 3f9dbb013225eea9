"""A process that performs one kind of write in a loop until killed (used by the crash tests).

Usage: python -m tests.writer KIND DB_PATH, KIND one of evidence, compress, forget, journal. After each
acknowledged write it prints "ack N" (N: how many writes have been acknowledged so far).
"""

from __future__ import annotations

import sys
from pathlib import Path

import anyio

from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.models.compress import CompressRequest
from ctxkeep.models.evidence import EvidenceItem
from ctxkeep.models.journal import ActionIntentRequest, ActionResultRequest
from ctxkeep.models.memory import MemoryForgetRequest, MemoryWriteRequest
from ctxkeep.storage import Store
from ctxkeep.tools.checkpoint import checkpoint_save
from ctxkeep.tools.compress import compress_history
from ctxkeep.tools.evidence import evidence_put
from ctxkeep.tools.forget import memory_forget
from ctxkeep.tools.journal import action_intent, action_result
from ctxkeep.tools.memory import memory_write
from ctxkeep.tools.scope import Scope

PROJECT = "/crash"
BATCH = 50


async def _evidence(scope: Scope, n: int) -> None:
    await evidence_put(scope, [EvidenceItem(content=f"record {n}-{i}: " + "payload " * 200, source="crash") for i in range(BATCH)])


async def _compress(scope: Scope, n: int) -> None:
    messages = [{"role": "user", "content": f"run {n}: fix the build"}]
    for i in range(12):
        messages.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{n}-{i}", "name": "Bash", "input": {"command": f"make {i}"}}]})
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}-{i}", "content": f"output {n}-{i}\n" * 300}]})
    await compress_history(scope, CompressRequest(messages=messages, task_id="crash", keep_recent=4))


async def _forget(scope: Scope, n: int) -> None:
    await memory_write(scope, MemoryWriteRequest(kind="user_preference", key=f"pref {n}", content=f"Preference number {n} " * 20,
                                                 explicit_confirmation=True, source_message_id=f"msg-{n}"))
    await memory_forget(scope, MemoryForgetRequest(key=f"pref {n}"))


async def _journal(scope: Scope, n: int) -> None:
    key = f"crash:item-{n}:send"
    await action_intent(scope, ActionIntentRequest(task_id="crash", idempotency_key=key, action="send", target=f"item {n}"))
    await action_result(scope, ActionResultRequest(idempotency_key=key, status="succeeded", external_id=f"ext-{n}"))


KINDS = {"evidence": _evidence, "compress": _compress, "forget": _forget, "journal": _journal}


async def main(kind: str, db_path: str) -> None:
    store = await Store.open(Path(db_path))
    scope = Scope(store=store, project=PROJECT)
    await checkpoint_save(scope, CheckpointSaveRequest(task_id="crash", state=TaskState(goal="survive SIGKILL")))
    n = 0
    while True:
        n += 1
        await KINDS[kind](scope, n)
        print(f"ack {n}", flush=True)


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
