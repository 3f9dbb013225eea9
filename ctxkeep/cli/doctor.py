"""`ctxkeep doctor`: what ctxkeep would use here, whether it works, and whether the clients it is installed in are set
up to use it (only those: a client ctxkeep is not installed in is not mentioned; with none, how to install one)."""

from __future__ import annotations

import json
import stat
import sys
from dataclasses import asdict
from pathlib import Path

from ctxkeep import __version__
from ctxkeep.cli.console import say_if_created
from ctxkeep.clients.core.checks import Check
from ctxkeep.errors import CtxkeepError
from ctxkeep.settings import Settings
from ctxkeep.storage import LATEST_SCHEMA as LATEST, open_store
from ctxkeep.tokens import encoding_name


def store_location(settings: Settings) -> str:
    """The database as people should see it: the file, or the PostgreSQL URL without its password."""
    from ctxkeep.db_location import shown_location

    return shown_location(settings.location)


async def _database_checks(settings: Settings) -> list[Check]:
    try:
        store = await open_store(settings.location, settings.busy_timeout_ms, settings.db_timeout_ms)
    except CtxkeepError as exc:
        return [Check("database", "fail", str(exc))]
    say_if_created(store)
    try:
        verdict = await store.integrity_check()
        checks = [
            Check("schema", "ok", f"{await store.schema_version()} (this ctxkeep knows {LATEST})"),
            *([] if settings.db_url else _mode_checks(settings.db_path)),
            Check("integrity", "ok" if verdict == "ok" else "fail", verdict),
        ]
        problem = store.read_only()
        return checks + ([Check("writable", "warn", problem)] if problem else [])
    finally:
        await store.close()


def _mode_checks(path: Path) -> list[Check]:
    """The file, its -wal and -shm: readable only by their owner; the folder: writable only by its owner (others
    could delete the file or put another in its place)."""
    checks = []
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if file.exists():
            mode = stat.S_IMODE(file.stat().st_mode)
            private = mode & 0o077 == 0
            name = "mode" if file == path else file.name.rsplit("-", 1)[1]
            checks.append(
                Check(
                    name,
                    "ok" if private else "warn",
                    f"{mode:o}" if private else f"{file}: {mode:o} (others can read it: chmod 600 {file})",
                )
            )
    folder_mode = stat.S_IMODE(path.parent.stat().st_mode)
    shared = folder_mode & 0o022 != 0
    checks.append(
        Check(
            "folder",
            "warn" if shared else "ok",
            f"{path.parent}: {folder_mode:o}"
            + (f" (others can replace or delete the database: chmod go-w {path.parent})" if shared else ""),
        )
    )
    return checks


async def run_doctor(settings: Settings, as_json: bool = False) -> int:
    """Print the checks; exit code 1 when one failed."""
    checks = [
        Check("ctxkeep", "info", f"{__version__} on Python {sys.version.split()[0]}"),
        Check("project", "info", settings.project),
        Check("database", "info", store_location(settings)),
        Check("tokenizer", "info", encoding_name()),
    ]
    checks += await _database_checks(settings)
    from ctxkeep.cli.clients import doctor_checks
    from ctxkeep.clients.table import CLIENTS

    others = ", ".join(client.name for client in CLIENTS[1:])
    checks += doctor_checks(Path(settings.project)) or [  # every client ctxkeep is installed in, Claude Code's first
        Check(
            "clients",
            "info",
            f"ctxkeep is not installed in any agent client here: ctxkeep install {CLIENTS[0].name} (or {others}; "
            "ctxkeep install --list shows what each gets)",
        )
    ]
    if as_json:
        print(json.dumps([asdict(c) for c in checks], indent=2))
    else:
        for check in checks:
            mark = "" if check.status in ("ok", "info") else f"[{check.status}] "
            print(f"{check.name + ':':<10} {mark}{check.detail}")
    if not as_json and any(c.status == "fail" for c in checks):
        print("doctor: a check failed (marked [fail]); the line says what to do")
    return 1 if any(c.status == "fail" for c in checks) else 0
