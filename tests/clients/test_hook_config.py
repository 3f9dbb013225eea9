"""The hooks read their environment once, in one place (`clients/core/hook_config.py`), by the same rules as the
server's Settings (`ctxkeep/environment.py`): a variable means one thing everywhere."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxkeep.clients.core.hook_config import hook_config
from ctxkeep.errors import InvalidInput
from ctxkeep.settings import Settings
from tests.client_home import Agent
from tests.paths import TESTS

PACKAGE = TESTS.parent / "ctxkeep"
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


_HOOK_RUNS = [
    ("claude-code", "user-prompt-submit", {"prompt": "never push to main"}),
    (
        "claude-code",
        "post-tool-use",
        {"tool_name": "Bash", "tool_input": {"command": "make"}, "tool_response": "x" * 9000},
    ),
    ("claude-code", "stop", {"stop_hook_active": False}),
    ("claude-code", "session-start", {"source": "resume"}),
    ("codex", "PostToolUse", {"tool_name": "Bash", "tool_input": {"command": "ls"}, "tool_response": "a"}),
    ("gemini", "BeforeAgent", {"prompt": "go on"}),
    ("cursor", "afterShellExecution", {"conversation_id": "s-1", "command": "make", "output": "ok"}),
]


def _hook_path_modules(tmp_path: Path) -> list[str]:
    """The ctxkeep modules the per-event hooks load, as a hook process loads them."""
    probe = (
        "import io, json, sys\nfrom ctxkeep.cli import main\n"
        "for client, event, data in json.loads(sys.argv[1]):\n"
        "    sys.stdin = io.TextIOWrapper(io.BytesIO(json.dumps(data).encode()))\n"
        "    main(['hook', client, event])\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('ctxkeep'))))\n"
    )
    runs = [(client, event, {"session_id": "s-1", "cwd": str(tmp_path), **data}) for client, event, data in _HOOK_RUNS]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CTXKEEP_DB": str(tmp_path / "ctxkeep.db")}
    done = subprocess.run([sys.executable, "-c", probe, json.dumps(runs)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


def test_only_the_hook_config_reads_ctxkeeps_variables_on_the_hook_path(tmp_path: Path) -> None:
    modules = _hook_path_modules(tmp_path)
    assert "ctxkeep.clients.core.hook_config" in modules and len(modules) > 20
    readers = {}
    for module in modules:
        path = PACKAGE.parent / (module.replace(".", "/") + ".py")
        path = path if path.exists() else path.with_suffix("") / "__init__.py"
        if _env_reads(path):
            readers[str(path.relative_to(PACKAGE))] = _env_reads(path)
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


def test_the_hook_config_reads_each_setting(tmp_path: Path) -> None:
    config = hook_config(
        {
            "HOME": "/home/u",
            "CTXKEEP_DB": str(tmp_path / "ctxkeep.db"),
            "CTXKEEP_BUSY_TIMEOUT_MS": "250",
            "CTXKEEP_GATE": "off",
            "CTXKEEP_SHAPE": "no",
            "CTXKEEP_SHAPE_READ": "1",
            "CTXKEEP_WORKER_WAIT_S": "2.5",
        }
    )
    assert (str(config.db), str(config.log), config.busy_timeout_ms, config.gate) == (
        str(tmp_path / "ctxkeep.db"),
        str(tmp_path / "ctxkeep-hooks.log"),
        250,
        False,
    )
    assert (config.shaping.enabled, config.shaping.read, config.worker_wait_s) == (False, True, 2.5)
