"""A temp home for the hooks of the clients other than Claude Code: a project, a database, the client's session files,
and `ctxkeep hook <client> <event>` run as the client runs it (a subprocess, JSON on stdin).

The fixtures in tests/fixtures/clients are real files written by Codex CLI 0.171 and Gemini CLI 0.61 against loopback
mocks (/work/notes/clients.md): a rollout with an auto-compaction, a rollout with a failing command, a Gemini chat file
with a compression, and hook inputs as those CLIs sent them.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import zlib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "clients"


def wait_for_line(log: Path, *parts: str, nth: int = 1, timeout: float = 60.0) -> str:
    """The `nth` line of the hook log at `log` holding every one of `parts`, once some process wrote it (a detached
    worker logs after it marked itself done: wait for the line read, not for the state)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = log.read_text() if log.exists() else ""
        found = [line for line in text.splitlines() if all(part in line for part in parts)]
        if len(found) >= nth:
            return found[nth - 1]
        time.sleep(0.05)
    raise AssertionError(f"no line of the hook log holds {parts}:\n{log.read_text() if log.exists() else ''}")


class Agent:
    """`home/` (HOME, the clients' folders under it), `project/`, `data/ctxkeep.db`; one session id."""

    def __init__(self, tmp: Path, session: str = "s-1") -> None:
        self.home, self.project, self.db = tmp / "home", tmp / "project", tmp / "data" / "ctxkeep.db"
        self.project.mkdir(parents=True, exist_ok=True)  # a second session shares the project
        self.home.mkdir(parents=True, exist_ok=True)
        self.db.parent.mkdir(mode=0o700, exist_ok=True)  # CTXKEEP_DB must name a file in an existing folder
        self.session = session
        self.log = self.db.parent / "ctxkeep-hooks.log"

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "PATH": os.environ.get("PATH", ""),
            "CTXKEEP_DB": str(self.db),
            "CTXKEEP_PROJECT": str(self.project),
            "CTXKEEP_WORKER_WAIT_S": "60",
            **extra,
        }

    def hook(
        self, client: str, event: str, stdin: str | bytes | dict[str, Any], **extra: str
    ) -> subprocess.CompletedProcess[bytes]:
        data = stdin if isinstance(stdin, bytes) else (stdin if isinstance(stdin, str) else json.dumps(stdin)).encode()
        return subprocess.run(
            [sys.executable, "-m", "ctxkeep", "hook", client, event],
            input=data,
            capture_output=True,
            env=self.env(**extra),
            cwd=ROOT,
            timeout=120,
        )

    def output(self, done: subprocess.CompletedProcess[bytes]) -> dict[str, Any] | None:
        assert done.returncode == 0 and done.stderr == b"", done.stderr[-2000:]
        text = done.stdout.decode("ascii")  # hooks print ASCII JSON
        return json.loads(text) if text.strip() else None

    def logged(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def wait_for_log(self, *parts: str, nth: int = 1) -> str:
        return wait_for_line(self.log, *parts, nth=nth)

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with sqlite3.connect(self.db) as conn:
            return conn.execute(sql, params).fetchall()

    def records(self, kind: str) -> list[tuple[Any, ...]]:
        return self.rows(
            "SELECT key, text, status FROM session_records WHERE kind = ? AND session_id = ? ORDER BY at",
            (kind, self.session),
        )

    def inbox(self) -> dict[str, str]:
        return {ref: zlib.decompress(data).decode() for ref, data in self.rows("SELECT ref, data FROM evidence_inbox")}

    def wait_for_worker(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = (
                self.rows(
                    "SELECT worker_started_at, worker_done_at FROM session_hooks WHERE session_id = ?", (self.session,)
                )
                if self.db.exists()
                else []
            )
            if not rows or not rows[0][0] or (rows[0][1] and rows[0][1] >= rows[0][0]):
                return
            time.sleep(0.05)
        raise AssertionError("the worker did not finish")

    # Where each client keeps a session's transcript (the hooks read only these).

    def codex_rollout(self, fixture: str) -> Path:
        path = (
            self.home
            / ".codex"
            / "sessions"
            / "2026"
            / "12"
            / "01"
            / f"rollout-2026-12-01T08-12-33-{self.session}.jsonl"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(FIXTURES / fixture, path)
        return path

    def gemini_chat(self, fixture: str | None = None) -> Path:
        path = (
            self.home / ".gemini" / "tmp" / "project" / "chats" / f"session-2026-12-01T08-15-{self.session[:8]}.jsonl"
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        if fixture:
            shutil.copy(FIXTURES / fixture, path)
        else:
            path.touch()
        return path

    def base(self, **fields: Any) -> dict[str, Any]:
        return {"session_id": self.session, "cwd": str(self.project), **fields}
