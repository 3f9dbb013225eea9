"""Backups `install` makes (`<file>.ctxkeep.bak`) leave with the uninstall that restores the original; a backup of a
file changed since install stays (it is the only copy of what install replaced) and the output says so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ctxkeep.clients.claude_code import install
from tests.paths import TESTS

ROOT = TESTS.parent
EXE = "/opt/ctxkeep/bin/ctxkeep"
SETTINGS = {"permissions": {"allow": ["Bash(ls)"]}, "model": "opus"}
MCP = {"mcpServers": {"github": {"command": "gh-mcp", "args": ["--stdio"]}}}


def _run(action: str, project: Path) -> list[str]:
    return install.apply(
        install.plan(action, "project", project, project / "home" / ".claude", EXE),  # type: ignore[arg-type]
        backup=action == "install",
    )


def _backups(project: Path) -> list[str]:
    return sorted(str(p.relative_to(project)) for p in project.rglob("*.ctxkeep.bak"))


def test_an_uninstall_that_restores_the_original_removes_its_backups(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(SETTINGS, indent=4))
    (tmp_path / ".mcp.json").write_text(json.dumps(MCP))
    originals = (tmp_path / ".claude" / "settings.json").read_bytes(), (tmp_path / ".mcp.json").read_bytes()
    _run("install", tmp_path)
    assert _backups(tmp_path) == [".claude/settings.json.ctxkeep.bak", ".mcp.json.ctxkeep.bak"]
    lines = _run("uninstall", tmp_path)
    assert ((tmp_path / ".claude" / "settings.json").read_bytes(), (tmp_path / ".mcp.json").read_bytes()) == originals
    assert _backups(tmp_path) == []
    assert any("restored" in line and "settings.json.ctxkeep.bak" in line for line in lines), lines


def test_a_backup_of_a_file_changed_since_install_is_kept_and_named(tmp_path: Path) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(json.dumps(SETTINGS))
    _run("install", tmp_path)
    data = json.loads(settings.read_text())
    data["model"] = "sonnet"
    settings.write_text(json.dumps(data))
    lines = _run("uninstall", tmp_path)
    assert json.loads(settings.read_text()) == {**SETTINGS, "model": "sonnet"}
    assert _backups(tmp_path) == [".claude/settings.json.ctxkeep.bak"]
    assert any("kept" in line and "settings.json.ctxkeep.bak" in line for line in lines), lines


def test_uninstall_through_the_command_leaves_no_backup_behind(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / ".claude").mkdir(parents=True)
    (project / ".claude" / "settings.json").write_text(json.dumps(SETTINGS))
    env = {
        **os.environ,
        "CTXKEEP_PROJECT": str(project),
        "CTXKEEP_DB": str(tmp_path / "db.sqlite"),
        "HOME": str(tmp_path / "home"),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "home" / ".claude"),
    }
    for action in ("install", "uninstall"):
        done = subprocess.run(
            [sys.executable, "-m", "ctxkeep", action, "claude-code", "--scope", "project"],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            cwd=project,
        )
        assert done.returncode == 0, done.stderr
    assert json.loads((project / ".claude" / "settings.json").read_text()) == SETTINGS
    assert _backups(project) == []
