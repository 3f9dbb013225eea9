"""`ctxkeep doctor`: what ctxkeep would use here, whether it works, and whether Claude Code is set up to use it."""

from __future__ import annotations

import json
import os
import shlex
import stat
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal

from ctxkeep import __version__
from ctxkeep.clients.claude_code.install import HOOKS
from ctxkeep.errors import CtxkeepError
from ctxkeep.settings import Settings
from ctxkeep.storage import LATEST_SCHEMA as LATEST
from ctxkeep.storage import Store
from ctxkeep.tokens import encoding_name


@dataclass(frozen=True)
class Check:
    name: str
    status: Literal["ok", "info", "warn", "fail"]
    detail: str


def _executable(command: str) -> Path | None:
    try:
        return Path(shlex.split(command)[0])
    except (ValueError, IndexError):
        return None


def _json_file(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _command_check(name: str, command: str) -> Check:
    exe = _executable(command)
    if exe is None or not exe.is_absolute():
        return Check(name, "warn", f"{command!r}: not an absolute path (Claude Code runs hooks with its own PATH)")
    if not (exe.is_file() and os.access(exe, os.X_OK)):
        return Check(name, "fail", f"{command!r}: {exe} is missing or not executable; run `ctxkeep install claude-code` again")
    return Check(name, "ok", command)


def claude_code_checks(project: Path, home: Path) -> list[Check]:
    """Where the server is registered and which hooks are installed, with their executables checked."""
    checks: list[Check] = []
    for path in (project / ".mcp.json", home / ".claude.json"):
        servers = (_json_file(path) or {}).get("mcpServers") if path.exists() else None
        server = servers.get("ctxkeep") if isinstance(servers, dict) else None
        if isinstance(server, dict):
            found_args = server.get("args")
            args: list[Any] = found_args if isinstance(found_args, list) else []
            checks.append(_command_check(f"mcp server in {path}", " ".join([shlex.quote(str(server.get("command", "")))] + [str(a) for a in args])))
    if not checks:
        checks.append(Check("mcp server", "warn", "not registered (ctxkeep install claude-code)"))
    found: set[str] = set()
    for path in (project / ".claude" / "settings.json", project / ".claude" / "settings.local.json", home / ".claude" / "settings.json"):
        data = _json_file(path) if path.exists() else None
        if path.exists() and data is None:
            checks.append(Check(f"settings {path}", "fail", "not valid JSON: Claude Code ignores it"))
        found_hooks = (data or {}).get("hooks")
        hooks: dict[str, Any] = found_hooks if isinstance(found_hooks, dict) else {}
        for event, (hook, _) in HOOKS.items():
            for group in hooks.get(event, []) if isinstance(hooks.get(event), list) else []:
                for entry in group.get("hooks", []) if isinstance(group, dict) else []:
                    command = str(entry.get("command", "")) if isinstance(entry, dict) else ""
                    if command.endswith(f" hook {hook}") and "ctxkeep" in command:
                        found.add(event)
                        checks.append(_command_check(f"{event} hook in {path}", command))
    missing = [event for event in HOOKS if event not in found]
    if missing:
        checks.append(Check("hooks", "warn", f"not installed: {', '.join(missing)} (ctxkeep install claude-code)"))
    return checks


async def _database_checks(settings: Settings) -> list[Check]:
    try:
        store = await Store.open(settings.db_path, settings.busy_timeout_ms)
    except CtxkeepError as exc:
        return [Check("database", "fail", str(exc))]
    try:
        mode = stat.S_IMODE(settings.db_path.stat().st_mode)
        verdict = await store.integrity_check()
        return [Check("schema", "ok", f"{await store.schema_version()} (this ctxkeep knows {LATEST})"),
                Check("mode", "ok" if mode & 0o077 == 0 else "warn", f"{mode:o}" + ("" if mode & 0o077 == 0 else " (readable by others: chmod 600 it)")),
                Check("integrity", "ok" if verdict == "ok" else "fail", verdict)]
    finally:
        await store.close()


async def run_doctor(settings: Settings, as_json: bool = False) -> int:
    """Print the checks; exit code 1 when one failed."""
    checks = [Check("ctxkeep", "info", f"{__version__} on Python {sys.version.split()[0]}"), Check("project", "info", settings.project),
              Check("database", "info", str(settings.db_path)), Check("tokenizer", "info", encoding_name())]
    checks += await _database_checks(settings)
    checks += claude_code_checks(Path(settings.project), Path(os.environ.get("HOME") or Path.home()))
    if as_json:
        print(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        for check in checks:
            mark = "" if check.status in ("ok", "info") else f"[{check.status}] "
            print(f"{check.name + ':':<10} {mark}{check.detail}")
    if not as_json and any(c.status == "fail" for c in checks):
        print("doctor: a check failed (marked [fail]); the line says what to do")
    return 1 if any(c.status == "fail" for c in checks) else 0
