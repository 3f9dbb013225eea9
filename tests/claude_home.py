"""A fake Claude Code home for hook tests: a config folder with this project's session folder, a transcript in it, and
the hooks run as Claude Code runs them (a subprocess, JSON on stdin)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio

from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.project import transcript_slug
from ctxkeep.settings import Settings
from ctxkeep.storage import SessionRow
from ctxkeep.tools.checkpoint import checkpoint_save
from ctxkeep.tools.scope import open_scope
from tests.client_home import wait_for_line

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
MAX_CHARS = 9_000


class Claude:
    """`home/.claude` (CLAUDE_CONFIG_DIR) with the session folder of `project`; one session `s-1` by default."""

    def __init__(self, tmp: Path, transcript: Path | None = None, session: str = "s-1") -> None:
        self.home, self.project, self.db = tmp / "home", tmp / "project", tmp / "data" / "ctxkeep.db"
        self.project.mkdir(parents=True)
        self.db.parent.mkdir(mode=0o700)  # CTXKEEP_DB must name a file in an existing folder
        self.config = self.home / ".claude"
        self.session = session
        self.transcript = self.config / "projects" / transcript_slug(str(self.project.resolve())) / f"{session}.jsonl"
        self.transcript.parent.mkdir(parents=True)
        if transcript is not None:
            shutil.copy(transcript, self.transcript)
        self.log = self.db.parent / "ctxkeep-hooks.log"

    def env(self, **extra: str) -> dict[str, str]:
        return {
            "HOME": str(self.home),
            "PATH": os.environ.get("PATH", ""),
            "CTXKEEP_DB": str(self.db),
            "CLAUDE_PROJECT_DIR": str(self.project),
            "CTXKEEP_WORKER_WAIT_S": "60",
            **extra,
        }

    def hook(self, name: str, stdin: str | bytes | dict[str, Any], **extra: str) -> subprocess.CompletedProcess[bytes]:
        data = stdin if isinstance(stdin, bytes) else (stdin if isinstance(stdin, str) else json.dumps(stdin)).encode()
        return subprocess.run(
            [sys.executable, "-m", "ctxkeep", "hook", name],
            input=data,
            capture_output=True,
            env=self.env(**extra),
            cwd=ROOT,
            timeout=120,
        )

    def base(self, event: str, **fields: Any) -> dict[str, Any]:
        return {
            "session_id": self.session,
            "transcript_path": str(self.transcript),
            "cwd": str(self.project),
            "hook_event_name": event,
            **fields,
        }

    def output(self, done: subprocess.CompletedProcess[bytes]) -> dict[str, Any] | None:
        assert done.returncode == 0 and done.stderr == b"", done.stderr[-2000:]
        text = done.stdout.decode("ascii")  # the hooks print ASCII JSON whatever the terminal's encoding
        return json.loads(text) if text.strip() else None

    def pre_compact(self, wait: bool = True, **extra: str) -> subprocess.CompletedProcess[bytes]:
        done = self.hook("pre-compact", self.base("PreCompact", trigger="auto"), **extra)
        if wait:
            self.wait_for_worker()
        return done

    def wait_for_worker(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            rows = self.rows("SELECT worker_started_at, worker_done_at FROM session_hooks") if self.db.exists() else []
            if not rows or not rows[0][0] or (rows[0][1] and rows[0][1] >= rows[0][0]):
                return
            time.sleep(0.05)
        raise AssertionError("the pre-compact worker did not finish")

    def session_start(self, source: str = "compact", session_id: str | None = None) -> str:
        data = self.base("SessionStart", source=source)
        data["session_id"] = session_id or self.session
        out = self.output(self.hook("session-start", data))
        if out is None:
            return ""
        assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
        return str(out["hookSpecificOutput"]["additionalContext"])

    def post_tool_use(
        self, tool: str, tool_input: dict[str, Any], response: Any, use_id: str = "toolu_1", **extra: str
    ) -> dict[str, Any] | None:
        return self.output(
            self.hook(
                "post-tool-use",
                self.base(
                    "PostToolUse", tool_name=tool, tool_input=tool_input, tool_response=response, tool_use_id=use_id
                ),
                **extra,
            )
        )

    def prompt(self, text: str) -> None:
        assert self.output(self.hook("user-prompt-submit", self.base("UserPromptSubmit", prompt=text))) is None

    def stop(self, active: bool = False, **extra: str) -> dict[str, Any] | None:
        return self.output(self.hook("stop", self.base("Stop", stop_hook_active=active), **extra))

    def append(self, *records: dict[str, Any]) -> None:
        with self.transcript.open("a", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record) + "\n")

    def save_task(self, task_id: str, state: dict[str, Any], bind: bool = False) -> None:
        """Save a task in this project as an agent would (and, with `bind`, bind the session to it as pre-compact does)."""

        async def save() -> None:
            async with open_scope(Settings.from_env(self.env())) as scope:
                await checkpoint_save(scope, CheckpointSaveRequest(task_id=task_id, state=TaskState(**state)))
                if bind:
                    async with scope.store.transaction() as tx:
                        await tx.sessions.put(
                            scope.project,
                            SessionRow(self.session, task_id, True, "/x.jsonl", "", "2026-11-30T00:00:00Z"),
                        )

        anyio.run(save)

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with sqlite3.connect(self.db) as conn:
            return conn.execute(sql, params).fetchall()

    def logged(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def wait_for_log(self, *parts: str, nth: int = 1) -> str:
        return wait_for_line(self.log, *parts, nth=nth)


def bash(command: str, stdout: str, **response: Any) -> tuple[str, dict[str, Any], dict[str, Any]]:
    return (
        "Bash",
        {"command": command},
        {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False, **response},
    )


def tool_use(name: str, data: dict[str, Any], use_id: str, session: str = "s-1") -> dict[str, Any]:
    return {
        "type": "assistant",
        "sessionId": session,
        "timestamp": "2026-11-30T10:00:00Z",
        "message": {
            "role": "assistant",
            "id": f"msg_{use_id}",
            "content": [{"type": "tool_use", "id": use_id, "name": name, "input": data}],
        },
    }


def tool_result(use_id: str, text: str, error: bool = False, session: str = "s-1") -> dict[str, Any]:
    return {
        "type": "user",
        "sessionId": session,
        "timestamp": "2026-11-30T10:00:01Z",
        "message": {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": use_id, "content": text, "is_error": error}],
        },
    }


def user(text: str, session: str = "s-1", at: str = "2026-11-30T09:00:00Z") -> dict[str, Any]:
    return {"type": "user", "sessionId": session, "timestamp": at, "message": {"role": "user", "content": text}}


def compaction(summary: str, session: str = "s-1") -> list[dict[str, Any]]:
    """A compact_boundary record and the summary record Claude Code writes after it."""
    return [
        {"type": "system", "subtype": "compact_boundary", "sessionId": session, "compactMetadata": {"trigger": "auto"}},
        {
            "type": "user",
            "sessionId": session,
            "isCompactSummary": True,
            "message": {
                "role": "user",
                "content": f"This session is being continued from a previous conversation.\n\n<summary>{summary}</summary>",
            },
        },
    ]
