"""A throwaway PostgreSQL server of a test's own, for the tests that stop, restart, pause and terminate it under
running ctxkeep servers: never the shared server of CTXKEEP_TEST_POSTGRES_URL, which other tests use at the same time.

`.ci/postgres start DIR` makes it in a temp dir (an unprivileged user, a loopback port, a random password) and starts
it again on the same port after `stop`; `pause` and `resume` send SIGSTOP and SIGCONT to every process of the cluster
(a hung server: connections open, nothing answers); `terminate` ends ctxkeep's backends (pg_terminate_backend).

Skipped, saying so, only when the PostgreSQL binaries are absent; with CTXKEEP_REQUIRE_POSTGRES=1 (CI) that fails.
"""

from __future__ import annotations

import asyncio
import glob
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / ".ci" / "postgres"


def binaries() -> str | None:
    """The folder of initdb and pg_ctl, or None when PostgreSQL is not installed."""
    configured = os.environ.get("CTXKEEP_PG_BIN")
    found = [configured] if configured else sorted(glob.glob("/usr/lib/postgresql/*/bin"))
    return next((folder for folder in reversed(found) if Path(folder, "initdb").exists()), None)


class OwnPostgres:
    """One cluster in `folder`; `url` connects to it (as the superuser the tests may also use)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.url = ""
        self.paused = False

    def _script(self, action: str) -> str:
        done = subprocess.run(
            ["bash", str(SCRIPT), action, str(self.folder)], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, f".ci/postgres {action} failed: {done.stderr}"
        return done.stdout.strip()

    def start(self) -> str:
        self.url = self._script("start")
        return self.url

    def stop(self) -> None:
        self.resume()
        self._script("stop")

    def pids(self) -> list[int]:
        """The postmaster and every process it started."""
        pid_file = self.folder / "data" / "postmaster.pid"
        postmaster = int(pid_file.read_text().split()[0])
        children = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                fields = stat.read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == postmaster:
                children.append(int(stat.parent.name))
        return [postmaster, *children]

    def pause(self) -> None:
        """SIGSTOP the whole cluster: sockets stay open, nothing answers."""
        for pid in self.pids():
            os.kill(pid, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        if not self.paused:
            return
        for pid in self.pids():
            os.kill(pid, signal.SIGCONT)
        self.paused = False

    def terminate(self) -> int:
        """pg_terminate_backend on every ctxkeep connection; how many were ended."""

        async def run() -> int:
            import asyncpg

            conn = await asyncpg.connect(self.url)
            try:
                return int(
                    await conn.fetchval(
                        "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
                        "WHERE application_name = 'ctxkeep' AND pid <> pg_backend_pid()"
                    )
                )
            finally:
                await conn.close()

        return asyncio.run(run())


@contextmanager
def own_postgres() -> Iterator[OwnPostgres]:
    """A started throwaway server, stopped and removed afterwards (resumed first when a test left it paused)."""
    if binaries() is None:
        reason = (
            "no PostgreSQL binaries (/usr/lib/postgresql/*/bin/initdb, or CTXKEEP_PG_BIN): the outage tests start "
            "a server of their own; apt-get install -y postgresql to run them"
        )
        if os.environ.get("CTXKEEP_REQUIRE_POSTGRES") == "1":
            pytest.fail(f"{reason}; CTXKEEP_REQUIRE_POSTGRES=1 forbids skipping", pytrace=False)
        pytest.skip(reason)
    with tempfile.TemporaryDirectory(prefix="ctxkeep-own-pg-") as parent:
        os.chmod(parent, 0o711)  # the unprivileged server user must reach its folder inside
        server = OwnPostgres(Path(parent) / "pg")
        server.start()
        try:
            yield server
        finally:
            server.stop()
