"""SIGKILL of the server during each kind of write (checkpoint save, evidence batch, compression with offload, memory forget,
journal):
on restart the file is sound, nothing is half-written, and every write acknowledged to the client is there."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.server.test_stdio_hostile import RawServer

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name != "posix", reason="SIGKILL is POSIX")]
BATCH = 50


def _requests(kind: str, n: int) -> list[tuple[str, dict[str, Any]]]:
    """The tool calls of write number `n` of a kind (acknowledged when the last one is answered without error)."""
    if kind == "checkpoint":
        return [
            (
                "checkpoint_save",
                {
                    "task_id": "crash",
                    "expected_version": n,
                    "state": {
                        "goal": "survive SIGKILL",
                        "completed": [f"step {i}" for i in range(n)],
                        "extra": {"padding": "x" * 4000, "step": n},
                    },
                },
            )
        ]
    if kind == "evidence":
        return [
            (
                "evidence_put",
                {
                    "items": [
                        {"content": f"record {n}-{i}: " + "payload " * 200, "source": "crash"} for i in range(BATCH)
                    ]
                },
            )
        ]
    if kind == "compress":
        messages: list[dict[str, Any]] = [{"role": "user", "content": f"run {n}: fix the build"}]
        for i in range(12):
            messages += [
                {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": f"t{n}-{i}", "name": "Bash", "input": {"command": f"make {i}"}}
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": f"t{n}-{i}", "content": f"output {n}-{i}\n" * 300}
                    ],
                },
            ]
        return [("compress_history", {"messages": messages, "task_id": "crash", "keep_recent": 4})]
    if kind == "forget":
        return [
            (
                "memory_write",
                {
                    "kind": "user_preference",
                    "key": f"pref {n}",
                    "content": f"Preference number {n} " * 20,
                    "explicit_confirmation": True,
                    "source_message_id": f"msg-{n}",
                },
            ),
            ("memory_forget", {"key": f"pref {n}"}),
        ]
    key = f"crash:item-{n}:send"
    return [
        ("action_intent", {"task_id": "crash", "idempotency_key": key, "action": "send", "target": f"item {n}"}),
        ("action_result", {"idempotency_key": key, "status": "succeeded", "external_id": f"ext-{n}"}),
    ]


def _write_until_killed(kind: str, db_path: Path, delay: float) -> int:
    """Drive a real `ctxkeep serve` with writes of `kind`; SIGKILL it after `delay` s; how many writes were acknowledged."""
    server = RawServer(db_path)
    assert "result" in server.call(1, "checkpoint_save", {"task_id": "crash", "state": {"goal": "survive SIGKILL"}})
    threading.Timer(delay, lambda: os.kill(server.proc.pid, signal.SIGKILL)).start()
    acknowledged, request_id = 0, 1
    try:
        while True:
            for tool, arguments in _requests(kind, acknowledged + 1):
                request_id += 1
                answer = server.call(request_id, tool, arguments)
                assert not answer["result"].get("isError"), answer
            acknowledged += 1
    except (AssertionError, BrokenPipeError, ValueError) as exc:
        try:
            killed = server.proc.wait(timeout=10) == -signal.SIGKILL
        except subprocess.TimeoutExpired:
            killed = False
        if not killed:
            raise AssertionError(f"the server failed before it was killed: {exc}") from exc
    return acknowledged


def _check(kind: str, conn: sqlite3.Connection, acknowledged: int) -> None:
    def one(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])

    def indexed(kind: str) -> int:  # rows of every project's index of that kind (one table per project)
        tables = conn.execute("SELECT name FROM sqlite_master WHERE name GLOB ?", (f"{kind}_fts_*_docsize",)).fetchall()
        return sum(one(f'SELECT count(*) FROM "{name}"') for (name,) in tables)

    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    assert one("SELECT count(*) FROM evidence") == indexed("evidence")  # the index is whole
    assert one("SELECT count(*) FROM evidence WHERE blob_id NOT IN (SELECT id FROM blobs)") == 0
    if kind == "checkpoint":  # version 1 is the set-up save; each acknowledged write added one, at most one more landed
        versions = conn.execute(
            "SELECT version, hash, parent_hash FROM checkpoints WHERE task_id = 'crash' ORDER BY version"
        ).fetchall()
        assert [v for v, _, _ in versions] == list(range(1, len(versions) + 1)) and acknowledged + 1 <= len(
            versions
        ) <= acknowledged + 2
        assert all(
            parent == previous[1] for previous, (_, _, parent) in zip(versions, versions[1:], strict=False)
        )  # the chain is whole
    elif kind == "evidence":
        records = one("SELECT count(*) FROM evidence")
        assert records % BATCH == 0 and acknowledged <= records // BATCH <= acknowledged + 1  # whole batches only
    elif kind == "compress":
        if acknowledged:
            assert one("SELECT count(*) FROM task_digests WHERE task_id = 'crash'") == 1
        for (refs_json,) in conn.execute("SELECT refs_json FROM compress_cursors").fetchall():
            for ref in json.loads(refs_json):  # every offloaded output the cursor names is retrievable
                assert conn.execute("SELECT count(*) FROM evidence WHERE ref = ?", (ref,)).fetchone()[0] == 1
    elif kind == "forget":
        assert (
            one("SELECT count(*) FROM memory_tombstones") >= acknowledged and one("SELECT count(*) FROM memories") <= 1
        )
        assert one("SELECT count(*) FROM memories") == indexed("memory")
    else:
        assert one("SELECT count(*) FROM actions WHERE status = 'succeeded'") >= acknowledged
        assert one("SELECT count(*) FROM actions WHERE status = 'open'") <= 1  # only the intent the kill interrupted


@pytest.mark.parametrize("kind", ["checkpoint", "evidence", "compress", "forget", "journal"])
def test_sigkill_of_the_server_during_writes_leaves_no_half_written_record(tmp_path: Path, kind: str) -> None:
    rng = random.Random(kind)
    for attempt in range(2):
        db_path = tmp_path / f"crash-{attempt}.db"
        acknowledged = _write_until_killed(kind, db_path, rng.uniform(0.3, 1.2))
        with sqlite3.connect(db_path) as conn:
            _check(kind, conn, acknowledged)
            latest = conn.execute("SELECT MAX(version) FROM checkpoints WHERE task_id = 'crash'").fetchone()[0]
        restarted = RawServer(db_path)  # the next server starts on the same file and serves
        try:
            loaded = restarted.call(1, "checkpoint_load", {"task_id": "crash", "format": "json"})["result"][
                "structuredContent"
            ]
            assert loaded["version"] == latest and (kind == "checkpoint" or latest == 1)
        finally:
            restarted.close()
