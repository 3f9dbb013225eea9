"""`ctxkeep doctor` speaks only of the clients ctxkeep is installed in (and says how to install one when it is in
none), and a Claude Code install at two scopes, which runs every hook twice, is named by `install` when it makes one
and by `doctor` with the fix (issue 27)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from ctxkeep.clients.claude_code import install as claude
from ctxkeep.clients.claude_code.doctor import checks as claude_code_checks
from tests.paths import TESTS

ROOT = TESTS.parent
EXE = "/opt/ctxkeep/bin/ctxkeep"


def doctor(tmp: Path, project: Path) -> str:
    """`ctxkeep doctor` in `project`, HOME and every client's config folder inside `tmp`."""
    (tmp / "data").mkdir(exist_ok=True)  # CTXKEEP_DB names a file in an existing folder
    env = {
        "HOME": str(tmp / "home"),
        "PATH": os.environ.get("PATH", ""),
        "CTXKEEP_DB": str(tmp / "data" / "ctxkeep.db"),
        "CTXKEEP_PROJECT": str(project),
        "XDG_CONFIG_HOME": str(tmp / "home" / ".config"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "ctxkeep", "doctor"], capture_output=True, text=True, env=env, cwd=project, timeout=120
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _project(tmp: Path) -> Path:
    project = tmp / "project"
    project.mkdir(parents=True)
    (tmp / "home").mkdir()
    return project


def test_doctor_says_nothing_of_claude_code_to_a_codex_only_user(tmp_path: Path) -> None:
    project = _project(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "ctxkeep", "install", "codex"],
        capture_output=True,
        text=True,
        env={**os.environ, "HOME": str(tmp_path / "home"), "CTXKEEP_PROJECT": str(project)},
        cwd=project,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    out = doctor(tmp_path, project)
    assert "codex server (user)" in out
    assert "claude" not in out.lower(), out  # no "mcp server: not registered (ctxkeep install claude-code)"


def test_doctor_with_no_client_installed_says_how_to_install_one(tmp_path: Path) -> None:
    project = _project(tmp_path)
    out = doctor(tmp_path, project)
    lines = [line for line in out.splitlines() if "install" in line]
    assert lines == [
        "clients:   ctxkeep is not installed in any agent client here: ctxkeep install claude-code (or codex, "
        "gemini, cursor, vscode, windsurf, cline; ctxkeep install --list shows what each gets)"
    ], out
    assert "[warn]" not in out


def test_claude_code_checks_are_empty_where_ctxkeep_is_not_installed_in_it(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert claude_code_checks(tmp_path, {"HOME": str(home)}) == []
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text('{"hooks": {"Stop": [{"hooks": [{"command": "echo hi"}]}]}}')
    assert claude_code_checks(tmp_path, {"HOME": str(home)}) == []  # someone else's hooks only


def _install(scope: claude.Scope, project: Path, config: Path) -> list[str]:
    return claude.apply(claude.plan("install", scope, project, config, EXE), backup=True)


def test_installing_at_a_second_scope_names_the_double_install_and_doctor_reports_it_with_the_fix(
    tmp_path: Path,
) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "")}
    config = home / ".claude"
    assert claude.double_install(project, config) is None
    _install("project", project, config)
    assert claude.double_install(project, config) is None  # one scope: each hook runs once
    assert not [c for c in claude_code_checks(project, env) if c.name == "hooks twice"]
    _install("local", project, config)
    note = claude.double_install(project, config)
    assert note is not None
    assert note == (
        "ctxkeep's hooks are installed at project and local scope: Claude Code runs every hook twice (each tool "
        "call, prompt and injection recorded and shown twice); keep one: ctxkeep uninstall claude-code --scope local"
    )
    [check] = [c for c in claude_code_checks(project, env) if c.name == "hooks twice"]
    assert check.status == "warn" and check.detail == note
    claude.apply(claude.plan("uninstall", "local", project, config, EXE), backup=False)
    assert claude.double_install(project, config) is None


def test_the_install_command_says_so_when_it_makes_a_double_install(tmp_path: Path) -> None:
    project, home = tmp_path / "project", tmp_path / "home"
    project.mkdir()
    home.mkdir()
    env = {**os.environ, "HOME": str(home), "CTXKEEP_PROJECT": str(project), "PATH": "/usr/bin:/bin"}
    env.pop("CLAUDE_CONFIG_DIR", None)

    def install(scope: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "ctxkeep", "install", "claude-code", "--scope", scope],
            capture_output=True,
            text=True,
            env=env,
            cwd=project,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "twice" not in install("project")
    second = install("local")
    assert "runs every hook twice" in second and "ctxkeep uninstall claude-code --scope local" in second
    hooks = json.loads((project / ".claude" / "settings.local.json").read_text())["hooks"]
    assert set(hooks) == set(claude.HOOKS)  # the install itself went through
