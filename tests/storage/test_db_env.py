"""A wrong `CTXKEEP_DB` is refused with what to send, and never creates anything: a file in a folder that does not
exist (only the default data folder is created), a scheme that is not a database URL. `sqlite:///` URLs are read as
SQLAlchemy reads them. A new database says where it was made, once. A hook with a wrong location still exits 0 and
logs one line (in the default data folder), creating nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.raw_stdio import FIRST_CALL
from tests.paths import TESTS

ROOT = TESTS.parent


def _env(tmp_path: Path, db: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CTXKEEP_", "XDG_"))}
    env.update({"HOME": str(tmp_path / "home"), "CTXKEEP_PROJECT": "/projects/alpha"})
    if db is not None:
        env["CTXKEEP_DB"] = db
    return env


def _ctxkeep(tmp_path: Path, db: str | None, *args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-m", "ctxkeep", *args],
        env=_env(tmp_path, db),
        cwd=work,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _everything_under(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")} if root.exists() else set()


@pytest.mark.parametrize("command", [("tasks",), ("stats",), ("serve",)])
def test_a_file_in_a_missing_folder_is_refused_and_nothing_is_created(tmp_path: Path, command: tuple[str, ...]) -> None:
    missing = tmp_path / "nonexistent" / "dir" / "x.db"
    done = _ctxkeep(tmp_path, str(missing), *command)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert f"the folder {missing.parent} does not exist" in done.stderr, done.stderr
    assert "mkdir" in done.stderr  # what to do instead
    assert not (tmp_path / "nonexistent").exists()


@pytest.mark.parametrize(
    "location",
    [
        "mysql://app:Zq8vR2mK5wx7@db.internal/ctx",
        "postgresql+asyncpg://app@db.internal/ctx",
        "file:///tmp/x.db",
        "sqlite:x.db",
        "sqlite://",
        "sqlite:///:memory:",
        "sqlite:///x.db?mode=ro",
    ],
)
def test_a_location_that_is_no_database_location_is_refused(tmp_path: Path, location: str) -> None:
    done = _ctxkeep(tmp_path, location, "tasks")
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert "CTXKEEP_DB" in done.stderr and "postgresql://" in done.stderr and "sqlite:///" in done.stderr, done.stderr
    assert "Zq8vR2mK5wx7" not in done.stderr
    assert _everything_under(tmp_path / "work") == set()  # no `sqlite:` or `mysql:` folder in the working directory


def test_sqlite_urls_name_the_file_as_sqlalchemy_reads_them(tmp_path: Path) -> None:
    relative = _ctxkeep(tmp_path, "sqlite:///kept.db", "tasks")
    assert relative.returncode == 0, relative.stderr
    assert (tmp_path / "work" / "kept.db").is_file() and not (tmp_path / "work" / "sqlite:").exists()
    absolute = tmp_path / "abs" / "my db.db"
    absolute.parent.mkdir()
    done = _ctxkeep(tmp_path, "sqlite:///" + str(absolute).replace(" ", "%20"), "tasks")
    assert done.returncode == 0 and absolute.is_file(), done.stderr
    refused = _ctxkeep(tmp_path, f"sqlite:///{tmp_path}/nope/x.db", "tasks")
    assert refused.returncode != 0 and "does not exist" in refused.stderr


def test_a_new_database_says_where_it_was_made_once(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    first = _ctxkeep(tmp_path, str(db), "tasks")
    assert first.returncode == 0, first.stderr
    assert first.stderr.splitlines() == [f"ctxkeep: created a new database at {db}"]
    second = _ctxkeep(tmp_path, str(db), "tasks")
    assert second.returncode == 0 and second.stderr == ""


def test_the_default_data_folder_is_created_and_named(tmp_path: Path) -> None:
    done = _ctxkeep(tmp_path, None, "tasks")
    default = tmp_path / "home" / ".local" / "share" / "ctxkeep" / "ctxkeep.db"
    assert done.returncode == 0 and default.is_file(), done.stderr
    assert f"ctxkeep: created a new database at {default}" in done.stderr


def test_serve_says_where_it_made_a_new_database(tmp_path: Path) -> None:
    db = tmp_path / "served.db"
    served = _ctxkeep(tmp_path, str(db), "serve", stdin=FIRST_CALL)
    assert db.is_file()
    lines = [line for line in served.stderr.splitlines() if "created a new database" in line]
    assert len(lines) == 1 and str(db) in lines[0], served.stderr
    again = _ctxkeep(tmp_path, str(db), "serve", stdin=FIRST_CALL)
    assert "created a new database" not in again.stderr


@pytest.mark.parametrize("location", ["{tmp}/nonexistent/dir/x.db", "sqlite:x.db", "mysql://db.internal/ctx"])
def test_a_hook_with_a_wrong_location_exits_0_logs_one_line_and_creates_nothing(tmp_path: Path, location: str) -> None:
    location = location.format(tmp=tmp_path)
    project = tmp_path / "project"
    project.mkdir()
    data = {"session_id": "s-1", "cwd": str(project), "hook_event_name": "UserPromptSubmit", "prompt": "fix the bug"}
    done = _ctxkeep(tmp_path, location, "hook", "user-prompt-submit", stdin=json.dumps(data))
    assert done.returncode == 0 and done.stdout.strip() in ("", "{}"), (done.stdout, done.stderr)
    assert not (tmp_path / "nonexistent").exists() and _everything_under(tmp_path / "work") == set()
    log = tmp_path / "home" / ".local" / "share" / "ctxkeep" / "ctxkeep-hooks.log"
    lines = log.read_text().splitlines()
    assert len(lines) == 1 and "CTXKEEP_DB" in lines[0], lines
