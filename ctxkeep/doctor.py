"""`ctxkeep doctor`: what ctxkeep would use here, and whether it works."""

from __future__ import annotations

import stat
import sys

from ctxkeep import __version__
from ctxkeep.errors import CtxkeepError
from ctxkeep.settings import Settings
from ctxkeep.storage import Store
from ctxkeep.storage.migrations import LATEST
from ctxkeep.tokens import encoding_name


async def run_doctor(settings: Settings) -> int:
    """Print one line per check; exit code 1 when the database cannot be used."""
    print(f"ctxkeep {__version__} on Python {sys.version.split()[0]}")
    print(f"project:   {settings.project}")
    print(f"database:  {settings.db_path}")
    print(f"tokenizer: {encoding_name()}")
    try:
        store = await Store.open(settings.db_path, settings.busy_timeout_ms)
    except CtxkeepError as exc:
        print(f"problem:   {exc}")
        return 1
    try:
        mode = stat.S_IMODE(settings.db_path.stat().st_mode)
        print(f"schema:    {await store.schema_version()} (this ctxkeep knows {LATEST})")
        print(f"mode:      {mode:o}" + ("" if mode & 0o077 == 0 else "  (readable by others: chmod 600 it)"))
        verdict = await store.integrity_check()
        print(f"integrity: {verdict}")
        return 0 if verdict == "ok" else 1
    finally:
        await store.close()
