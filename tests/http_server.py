"""`ctxkeep serve --http` as a real subprocess for the HTTP tests: started on a free loopback port, waited for until
it listens (its log shown if it exits or takes over 30 s), terminated afterwards."""

from __future__ import annotations

import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def http_server(
    port: int,
    extra: tuple[str, ...],
    env: Mapping[str, str],
    log: Path,
    cwd: Path | None = None,
    max_files: int | None = None,
) -> Iterator[subprocess.Popen[bytes]]:
    """The running server (its stderr in `log`), allowed `max_files` open files when given; AssertionError with the
    log when it never listens."""

    def limit_files() -> None:
        if max_files is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (max_files, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    with log.open("w") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ctxkeep", "serve", "--http", "--port", str(port), *extra],
            env=dict(env),
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            cwd=cwd,
            # one system call, no lock taken: safe between fork and exec even with the test's threads
            preexec_fn=limit_files if max_files is not None else None,  # noqa: PLW1509
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.1)
        yield proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)
