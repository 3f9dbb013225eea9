"""Harnesses that run the real agent CLIs headless against the loopback mocks, with `ctxkeep serve` as their MCP server.

    with claude_code(tmp_path, [call("checkpoint_load", {"task_id": "t"}), text("ok")]) as cli:
        done = cli.run("resume the task")
        body = cli.requests()[-1].body          # what the model received last

Each harness makes `root/home` (HOME, and the CLI's config dir under it) and `root/proj` (a git repo,
the CLI's cwd), starts the mock on a free loopback port, and registers ctxkeep — `sys.executable -m
ctxkeep serve` from the venv the tests run in, with CTXKEEP_DB=`root/ctxkeep.db` and
CTXKEEP_PROJECT=`root/proj` — unless `ctxkeep=False` (for tests that install it themselves). The same
two variables are in the CLI's own environment, so hooks it runs see them too. The CLIs come from
`npm ci --prefix tests/e2e` (.ci/run does it); `claude_code()`, `codex()` and `gemini()` skip the test
with that instruction when node or the CLI is missing.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e import mock_anthropic, mock_gemini, mock_openai
from tests.e2e.mock_api import MockServer, Recorded, Turn

E2E = Path(__file__).resolve().parent
BIN = E2E / "node_modules" / ".bin"
INSTALL = "run `npm ci --prefix tests/e2e` (.ci/run does)"


@dataclass
class Run:
    """One CLI invocation: exit code, output, wall time."""

    returncode: int
    stdout: str
    stderr: str
    elapsed: float

    def json(self) -> Any:
        return json.loads(self.stdout)

    def json_lines(self) -> list[Any]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip().startswith("{")]


def _run(args: Sequence[str], cwd: Path, env: dict[str, str], timeout: float) -> Run:
    """Run in a new process group and end the whole group afterwards: the npm wrappers start the real
    binary as a child, and the binary starts ctxkeep; neither may outlive the test."""
    started = time.monotonic()
    proc = subprocess.Popen(
        list(args),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\n[harness: killed after {timeout} s]"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return Run(proc.returncode, out, err, time.monotonic() - started)


class Harness:
    """A temp HOME and project, a mock model API, and one CLI to run there (see the subclasses)."""

    view: Any = None  # the mock module: its factory and its readers of a request body
    binary: str = ""
    needs_node = True
    env_prefixes: tuple[str, ...] = ()

    def __init__(self, root: Path, script: list[Turn], ctxkeep: bool = True) -> None:
        self.root = root
        self.home = root / "home"
        self.proj = root / "proj"
        self.db = root / "ctxkeep.db"
        self.with_ctxkeep = ctxkeep
        self.home.mkdir(parents=True, exist_ok=True)
        self.proj.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "init", "-q", str(self.proj)], check=True)
        self.mock: MockServer = self.view.mock(script)

    @classmethod
    def missing(cls) -> str | None:
        """Why this CLI cannot run here (the skip reason), or None."""
        if cls.needs_node and shutil.which("node") is None:
            return f"node is not installed ({cls.__name__} runs on node)"
        if not cls.executable().exists():
            return f"{cls.__name__} CLI is not installed at {cls.executable()}: {INSTALL}"
        return None

    @classmethod
    def executable(cls) -> Path:
        return BIN / cls.binary

    @property
    def ctxkeep_env(self) -> dict[str, str]:
        return {"CTXKEEP_DB": str(self.db), "CTXKEEP_PROJECT": str(self.proj)}

    def ctxkeep_server(self) -> dict[str, Any]:
        """The stdio server entry every client config takes: the real `ctxkeep serve` of this venv."""
        return {"command": sys.executable, "args": ["-m", "ctxkeep", "serve"], "env": self.ctxkeep_env}

    def env(self) -> dict[str, str]:
        """The parent environment without the CLI's own variables, plus HOME and ctxkeep's variables."""
        base = {
            k: v for k, v in os.environ.items() if not k.startswith(self.env_prefixes) and not k.startswith("CTXKEEP_")
        }
        return base | {"HOME": str(self.home), "NO_COLOR": "1"} | self.ctxkeep_env

    def command(self, prompt: str) -> list[str]:
        raise NotImplementedError

    def configure(self) -> None:
        """Write the CLI's config (the mock's address, ctxkeep as its MCP server)."""

    def run(self, prompt: str, *extra_args: str, timeout: float = 120, env: dict[str, str] | None = None) -> Run:
        return _run([*self.command(prompt), *extra_args], self.proj, self.env() | (env or {}), timeout)

    def requests(self, kind: str = "main") -> list[Recorded]:
        """The model requests received so far (`main`: the agent loop's)."""
        return self.mock.of_kind(kind)

    # What the model saw in one request body (the subclasses know where each client puts it).

    def tools(self, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """ctxkeep's tool definitions as sent, by ctxkeep's own tool name."""
        raise NotImplementedError

    def tool_results(self, body: dict[str, Any]) -> list[str]:
        """Every tool result in the request, as the text the model reads."""
        return list(self.view.tool_results(body))

    def instructions(self, body: dict[str, Any]) -> str:
        """Every instruction text the model reads (system prompt, developer messages, …)."""
        return str(self.view.instructions_text(body))

    def __enter__(self) -> Harness:
        self.mock.__enter__()
        self.configure()
        return self

    def __exit__(self, *exc: object) -> None:
        self.mock.__exit__(*exc)


def _native_claude() -> Path:
    """bin/claude.exe is the native binary once npm's postinstall linked it; without that step, use the platform package's."""
    linked = E2E / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"
    if linked.exists() and linked.stat().st_size > 1_000_000:
        return linked
    return E2E / "node_modules" / "@anthropic-ai" / "claude-code-linux-x64" / "claude"


class ClaudeCode(Harness):
    """Claude Code (`claude -p`, JSON output) with CLAUDE_CONFIG_DIR=home/.claude; ctxkeep via --mcp-config with alwaysLoad
    (tool search off, so the definitions are in every request)."""

    view = mock_anthropic
    needs_node = False  # a native binary since 2.1.113
    env_prefixes = ("ANTHROPIC_", "CLAUDE")

    @classmethod
    def executable(cls) -> Path:
        return _native_claude()

    @property
    def config_dir(self) -> Path:
        return self.home / ".claude"

    @property
    def mcp_config(self) -> Path:
        return self.root / "mcp.json"

    def configure(self) -> None:
        self.config_dir.mkdir(parents=True, exist_ok=True)
        if self.with_ctxkeep:
            server = {"type": "stdio", **self.ctxkeep_server(), "alwaysLoad": True}
            self.mcp_config.write_text(json.dumps({"mcpServers": {"ctxkeep": server}}, indent=1))

    def tools(self, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {t["name"].removeprefix("mcp__ctxkeep__"): t for t in mock_anthropic.tools(body)}

    def write_settings(self, settings: dict[str, Any], name: str = "settings.json") -> Path:
        """Project settings (hooks, permissions) at proj/.claude/<name>."""
        path = self.proj / ".claude" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(settings, indent=1))
        return path

    def env(self) -> dict[str, str]:
        return super().env() | {
            "CLAUDE_CONFIG_DIR": str(self.config_dir),
            "ANTHROPIC_BASE_URL": self.mock.url,
            "ANTHROPIC_API_KEY": "fake",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "IS_SANDBOX": "1",  # lets --dangerously-skip-permissions run as root
        }

    def command(self, prompt: str) -> list[str]:
        args = [str(self.executable()), "-p", prompt, "--output-format", "json", "--dangerously-skip-permissions"]
        return args + (["--mcp-config", str(self.mcp_config), "--strict-mcp-config"] if self.with_ctxkeep else [])


def _toml(value: Any) -> str:
    """A TOML value for strings, numbers, booleans, lists and inline tables (JSON string escapes are valid TOML)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return "{ " + ", ".join(f"{json.dumps(k)} = {_toml(v)}" for k, v in value.items()) + " }"


class Codex(Harness):
    """Codex CLI (`codex exec --json`) with CODEX_HOME=home/.codex, a custom provider pointing at the mock, and ctxkeep's
    tools approved (exec's approval policy is `never`). `extra_toml` is appended to config.toml before the run."""

    view = mock_openai
    binary = "codex"
    env_prefixes = ("OPENAI", "CODEX")
    extra_toml = ""

    @property
    def codex_home(self) -> Path:
        return self.home / ".codex"

    def configure(self) -> None:
        self.codex_home.mkdir(parents=True, exist_ok=True)
        lines = [
            'model = "mock-model"',
            'model_provider = "mock"',
            "check_for_update_on_startup = false",
            "",
            "[model_providers.mock]",
            'name = "mock"',
            f'base_url = "{self.mock.url}/v1"',
            'wire_api = "responses"',
            "request_max_retries = 0",
            "stream_max_retries = 0",
            "",
            "[analytics]",
            "enabled = false",
            "",
        ]
        if self.with_ctxkeep:
            server = self.ctxkeep_server()
            lines += [
                "[mcp_servers.ctxkeep]",
                f"command = {_toml(server['command'])}",
                f"args = {_toml(server['args'])}",
                f"env = {_toml(server['env'])}",
                'default_tools_approval_mode = "approve"',
                "required = true",
                "",
            ]
        self.config_toml.write_text("\n".join(lines) + "\n" + self.extra_toml)

    def tools(self, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {t["name"]: t for t in mock_openai.tools(body)}

    @property
    def config_toml(self) -> Path:
        return self.codex_home / "config.toml"

    def env(self) -> dict[str, str]:
        return super().env() | {"CODEX_HOME": str(self.codex_home)}

    def command(self, prompt: str) -> list[str]:
        return [str(self.executable()), "exec", "--json", "--skip-git-repo-check", prompt]


class Gemini(Harness):
    """Gemini CLI (`gemini -p`, JSON output) with its user settings at home/.gemini/settings.json, the workspace trusted
    by GEMINI_CLI_TRUST_WORKSPACE, and ctxkeep trusted (no confirmations)."""

    view = mock_gemini
    binary = "gemini"
    env_prefixes = ("GEMINI", "GOOGLE")

    @property
    def settings_path(self) -> Path:
        return self.home / ".gemini" / "settings.json"

    def configure(self) -> None:
        settings: dict[str, Any] = {
            "security": {"auth": {"selectedType": "gemini-api-key"}},
            "privacy": {"usageStatisticsEnabled": False},
            "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            "telemetry": {"enabled": False},
            "ide": {"enabled": False},
            "model": {"name": "gemini-2.5-flash"},
        }
        if self.with_ctxkeep:
            settings["mcpServers"] = {"ctxkeep": {**self.ctxkeep_server(), "trust": True}}
        self.write_settings(settings)

    def tools(self, body: dict[str, Any]) -> dict[str, dict[str, Any]]:
        return {t["name"].removeprefix("mcp_ctxkeep_"): t for t in mock_gemini.tools(body)}

    def write_settings(self, settings: dict[str, Any]) -> Path:
        """User settings (MCP servers, hooks) at home/.gemini/settings.json."""
        self.settings_path.parent.mkdir(parents=True, exist_ok=True)
        self.settings_path.write_text(json.dumps(settings, indent=1))
        return self.settings_path

    def env(self) -> dict[str, str]:
        return super().env() | {
            "GEMINI_API_KEY": "fake-key",
            "GOOGLE_GEMINI_BASE_URL": self.mock.url,
            "GEMINI_TELEMETRY_ENABLED": "false",
            "NO_BROWSER": "1",
            "GEMINI_CLI_TRUST_WORKSPACE": "true",
        }

    def command(self, prompt: str) -> list[str]:
        return [str(self.executable()), "-p", prompt, "--output-format", "json"]


@contextmanager
def _started(cls: type[Harness], root: Path, script: list[Turn], ctxkeep: bool) -> Iterator[Any]:
    reason = cls.missing()
    if reason:
        pytest.skip(reason)
    with cls(root, script, ctxkeep) as harness:
        yield harness


def claude_code(root: Path, script: list[Turn], ctxkeep: bool = True) -> Any:
    """A started ClaudeCode harness (skips the test when the CLI is not installed)."""
    return _started(ClaudeCode, root, script, ctxkeep)


def codex(root: Path, script: list[Turn], ctxkeep: bool = True) -> Any:
    """A started Codex harness (skips the test when node or the CLI is not installed)."""
    return _started(Codex, root, script, ctxkeep)


def gemini(root: Path, script: list[Turn], ctxkeep: bool = True) -> Any:
    """A started Gemini harness (skips the test when node or the CLI is not installed)."""
    return _started(Gemini, root, script, ctxkeep)
