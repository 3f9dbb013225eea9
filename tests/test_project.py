"""Project resolution: one rule for server, CLI and hooks; never the basename."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ctxkeep.errors import InvalidInput
from ctxkeep.project import default_db_path, resolve_project
from ctxkeep.settings import Settings


def test_precedence_is_ctxkeep_project_then_claude_project_dir_then_hook_cwd_then_cwd(tmp_path: Path) -> None:
    a, b, c, d = (tmp_path / name for name in "abcd")
    for folder in (a, b, c, d):
        folder.mkdir()
    env = {"CTXKEEP_PROJECT": str(a), "CLAUDE_PROJECT_DIR": str(b)}
    assert resolve_project(env, hook_cwd=str(c), cwd=str(d)) == str(a)
    assert resolve_project({"CLAUDE_PROJECT_DIR": str(b)}, hook_cwd=str(c), cwd=str(d)) == str(b)
    assert resolve_project({}, hook_cwd=str(c), cwd=str(d)) == str(c)
    assert resolve_project({}, cwd=str(d)) == str(d)


def test_inside_a_git_repository_the_top_level_is_the_project(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / "pkg").mkdir(parents=True)
    assert resolve_project({}, cwd=str(repo / "src" / "pkg")) == str(repo)


def test_a_worktree_with_a_git_file_counts_as_a_top_level(tmp_path: Path) -> None:
    worktree = tmp_path / "wt"
    (worktree / "lib").mkdir(parents=True)
    (worktree / ".git").write_text("gitdir: /elsewhere/.git/worktrees/wt\n")
    assert resolve_project({}, cwd=str(worktree / "lib")) == str(worktree)


def test_symlinks_resolve_so_two_paths_to_one_folder_are_one_project(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    os.symlink(real, link)
    assert resolve_project({}, cwd=str(link)) == resolve_project({}, cwd=str(real)) == str(real.resolve())


def test_two_folders_with_the_same_basename_are_two_projects(tmp_path: Path) -> None:
    one, two = tmp_path / "x" / "app", tmp_path / "y" / "app"
    one.mkdir(parents=True)
    two.mkdir(parents=True)
    assert resolve_project({}, cwd=str(one)) != resolve_project({}, cwd=str(two))


def test_settings_read_the_database_path_from_the_environment(tmp_path: Path) -> None:
    settings = Settings.from_env({"CTXKEEP_DB": str(tmp_path / "k.db"), "CTXKEEP_PROJECT": str(tmp_path)})
    assert settings.db_path == tmp_path / "k.db" and settings.project == str(tmp_path.resolve())
    assert default_db_path({"HOME": "/home/u"}).parts[-2:] == ("ctxkeep", "ctxkeep.db")


def test_a_bad_busy_timeout_is_a_clear_error() -> None:
    with pytest.raises(InvalidInput, match="CTXKEEP_BUSY_TIMEOUT_MS must be a whole number"):
        Settings.from_env({"CTXKEEP_BUSY_TIMEOUT_MS": "soon", "CTXKEEP_PROJECT": "/"})
