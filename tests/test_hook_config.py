"""The hooks read their environment once, in one place (`clients/core/hook_config.py`), by the same rules as the
server's Settings (`ctxkeep/environment.py`): a variable means one thing everywhere."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ctxkeep.clients.core.hook_config import hook_config
from ctxkeep.errors import InvalidInput
from ctxkeep.settings import Settings
from tests.client_home import Agent

PACKAGE = Path(__file__).resolve().parent.parent / "ctxkeep"
# the modules that read ctxkeep's variables on the hook path: the config, and the rules it reads them with
READERS = {"clients/core/hook_config.py", "clients/core/shaping.py", "project.py", "environment.py"}


def _env_reads(path: Path) -> list[str]:
    """The CTXKEEP_* names a module reads from a mapping: `x.get("CTXKEEP_…")` and `x["CTXKEEP_…"]`."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        key = None
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
        ):
            key = node.args[0]
        elif isinstance(node, ast.Subscript):
            key = node.slice
        if isinstance(key, ast.Constant) and isinstance(key.value, str) and key.value.startswith("CTXKEEP_"):
            found.append(key.value)
    return found


def test_only_the_hook_config_reads_ctxkeeps_variables_on_the_hook_path() -> None:
    hook_path = [p for p in (PACKAGE / "clients").rglob("*.py") if p.name not in ("install.py", "doctor.py")]
    readers = {
        str(p.relative_to(PACKAGE)): _env_reads(p) for p in [*hook_path, PACKAGE / "project.py"] if _env_reads(p)
    }
    assert set(readers) <= READERS, readers


def test_a_bad_busy_timeout_means_the_same_to_a_hook_and_to_the_server(tmp_path: Path) -> None:
    env = {"CTXKEEP_BUSY_TIMEOUT_MS": "5s", "HOME": str(tmp_path), "CTXKEEP_DB": str(tmp_path / "x.db")}
    with pytest.raises(ValueError) as hook:
        hook_config(env)
    with pytest.raises(InvalidInput) as server:
        Settings.from_env(env)
    assert (
        str(hook.value) == str(server.value) == "CTXKEEP_BUSY_TIMEOUT_MS must be a whole number of at least 0, not '5s'"
    )
    agent = Agent(tmp_path)
    done = agent.hook("codex", "UserPromptSubmit", agent.base(prompt="hi"), CTXKEEP_BUSY_TIMEOUT_MS="5s")
    assert (done.returncode, done.stdout) == (0, b"")
    assert "must be a whole number of at least 0, not '5s'" in agent.logged()  # logged, the input passed through
    assert not agent.db.exists()  # nothing opened with a setting it could not read


def test_the_hook_config_reads_each_setting() -> None:
    config = hook_config(
        {
            "HOME": "/home/u",
            "CTXKEEP_DB": "/d/ctxkeep.db",
            "CTXKEEP_BUSY_TIMEOUT_MS": "250",
            "CTXKEEP_GATE": "off",
            "CTXKEEP_SHAPE": "no",
            "CTXKEEP_SHAPE_READ": "1",
            "CTXKEEP_WORKER_WAIT_S": "2.5",
        }
    )
    assert (config.db, config.log, config.busy_timeout_ms, config.gate) == (
        Path("/d/ctxkeep.db"),
        Path("/d/ctxkeep-hooks.log"),
        250,
        False,
    )
    assert (config.shaping.enabled, config.shaping.read, config.worker_wait_s) == (False, True, 2.5)
