"""A PostgreSQL password is never shown: not by `ctxkeep stats` or `ctxkeep tasks`, not in the server's log or its
banner, whether the URL carries it after the user, as `?password=` (a form libpq documents), or holds an unescaped
`#`, `/`, `?` or `@` a URL parser would cut it at. One function shows a location (ctxkeep.db_location)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ctxkeep.db_location import scrubbed, shown_location
from tests.http_server import free_port, http_server
from tests.pg import fresh_schema
from tests.paths import TESTS

ROOT = TESTS.parent
SECRET = "Zq8vR2mK5wx7Lp4Vn8Rt"

SHOWN = {
    "postgresql://app:Zq8vR2mK5wx7Lp4Vn8Rt@db.internal:5432/ctx": "postgresql://app:***@db.internal:5432/ctx",
    "postgres://app:Zq8vR2mK5wx7Lp4Vn8Rt@db.internal/ctx?sslmode=require": "postgres://app:***@db.internal/ctx?sslmode=require",
    "postgresql://app@db.internal/ctx?password=Zq8vR2mK5wx7Lp4Vn8Rt&sslmode=require": (
        "postgresql://app@db.internal/ctx?password=***&sslmode=require"
    ),
    "postgresql://app@db.internal/ctx?sslmode=verify-full&sslpassword=Zq8vR2mK5wx7Lp4Vn8Rt": (
        "postgresql://app@db.internal/ctx?sslmode=verify-full&sslpassword=***"
    ),
    "postgresql:///ctx?host=/var/run/postgresql&user=app&PASSWORD=Zq8vR2mK5wx7Lp4Vn8Rt": (
        "postgresql:///ctx?host=/var/run/postgresql&user=app&PASSWORD=***"
    ),
    "postgresql://app:Zq8vR2#mK5wx7Lp4Vn8Rt@db.internal/ctx": "postgresql://app:***@db.internal/ctx",
    "postgresql://app:Zq8vR2/mK5wx7Lp4Vn8Rt@db.internal/ctx": "postgresql://app:***@db.internal/ctx",
    "postgresql://app:Zq8vR2?mK5wx7Lp4Vn8Rt@db.internal/ctx": "postgresql://app:***@db.internal/ctx",
    "postgresql://app:Zq8vR2@mK5wx7Lp4Vn8Rt@db.internal/ctx": "postgresql://app:***@db.internal/ctx",
    "postgresql://app:Zq8vR2%23mK5wx7Lp4Vn8Rt@db.internal/ctx": "postgresql://app:***@db.internal/ctx",
    "postgresql://app@db.internal:5432/ctx": "postgresql://app@db.internal:5432/ctx",
    "/home/me/.local/share/ctxkeep/ctxkeep.db": "/home/me/.local/share/ctxkeep/ctxkeep.db",
}


@pytest.mark.parametrize("url", sorted(SHOWN))
def test_a_location_is_shown_without_its_password(url: str) -> None:
    assert shown_location(url) == SHOWN[url]


def test_a_drivers_message_loses_every_piece_of_the_password() -> None:
    url = "postgresql://app:Zq8vR2#mK5wx7/Lp4Vn8Rt@db.internal/ctx?password=Other-Secret-99"
    message = "invalid literal for int() with base 10: 'Zq8vR2'; bad query field: 'Lp4Vn8Rt@db'; Other-Secret-99"
    assert scrubbed(message, url) == "invalid literal for int() with base 10: '***'; bad query field: '***@db'; ***"


@pytest.fixture
def schema_url() -> Iterator[str]:
    with fresh_schema() as url:
        yield url


def _parts(url: str) -> tuple[str, str, str]:
    """user, password, and what follows the `@` of a test server's URL."""
    credentials, _, place = url.partition("://")[2].rpartition("@")
    user, _, password = credentials.partition(":")
    assert password, "the test server's URL carries no password"
    return user, password, place


def _forms(url: str) -> dict[str, tuple[str, list[str]]]:
    """The same server named in each form; with each, the strings that must never be shown."""
    user, password, place = _parts(url)
    joiner = "&" if "?" in place else "?"
    forms = {
        "after the user": (url, [password]),
        "as ?password=": (f"postgresql://{user}@{place}{joiner}password={password}", [password]),
    }
    for char in "#/?":
        bad = f"{SECRET[:8]}{char}{SECRET[8:]}"  # not the server's password: the connection fails, and says so
        forms[f"with an unescaped {char}"] = (f"postgresql://{user}:{bad}@{place}", [SECRET[:8], SECRET[8:]])
    return forms


def _ctxkeep(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CTXKEEP_DB": url, "CTXKEEP_PROJECT": "/projects/alpha"}
    return subprocess.run(
        [sys.executable, "-m", "ctxkeep", *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("command", ["stats", "tasks", "doctor"])
def test_stats_tasks_and_doctor_never_print_the_password(schema_url: str, command: str) -> None:
    for form, (url, hidden) in _forms(schema_url).items():
        done = _ctxkeep(url, command)
        shown = done.stdout + done.stderr
        assert "Traceback" not in shown, (form, shown)
        assert not [h for h in hidden if h in shown], (form, shown)
        if form.startswith("with an unescaped"):
            assert "percent-encode" in shown, (form, shown)  # says what to send instead
        elif command == "stats":
            assert done.returncode == 0, (form, shown)


def test_the_servers_log_and_banner_never_show_the_password(schema_url: str, tmp_path: Path) -> None:
    for form, (url, hidden) in _forms(schema_url).items():
        env = {**os.environ, "CTXKEEP_DB": url, "CTXKEEP_PROJECT": "/projects/alpha", "HOME": str(tmp_path)}
        served = subprocess.run(
            [sys.executable, "-m", "ctxkeep", "serve"], env=env, input="", capture_output=True, text=True, timeout=60
        )
        assert not [h for h in hidden if h in served.stderr], (form, served.stderr)
        if not form.startswith("with an unescaped"):
            log = tmp_path / f"http-{form[:5].strip()}.log"
            with http_server(free_port(), ("--no-token",), env, log):
                pass
            assert "database postgresql://" in log.read_text(), log.read_text()
            assert not [h for h in hidden if h in log.read_text()], (form, log.read_text())
