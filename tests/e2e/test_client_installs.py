"""`ctxkeep install codex` and `ctxkeep install gemini` with the real CLIs (pinned in tests/e2e/package-lock.json), each
against a loopback mock of its model API that scripts the model and records every request.

Each test installs ctxkeep the way a user does (`ctxkeep install <client>` into the CLI's own config files, next to the
harness's model-provider settings), runs a session whose scripted model saves the procurement task and loads it back,
then a second run of the same session: its session-start hook injects the records of the first run, and the mock
receives that injection. Uninstall then restores the config files byte for byte.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from ctxkeep.project import default_db_path
from ctxkeep.storage import open_store
from ctxkeep.tools import checkpoint
from ctxkeep.tools.scope import Scope
from tests.conftest import procurement_state
from tests.e2e import mock_openai
from tests.e2e.clients import codex, gemini
from tests.e2e.mock_api import call, text

pytestmark = pytest.mark.slow
CTXKEEP = str(Path(sys.executable).parent / "ctxkeep")
FIXED = {"checkpoint_save", "checkpoint_load", "evidence_put", "evidence_get", "compress_history"}
RESTORED = "ctxkeep restored this session's records"


def _ctxkeep(cli: Any, *args: str) -> str:
    done = subprocess.run(
        [CTXKEEP, *args], cwd=cli.proj, env=cli.env() | _db(cli), capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def _db(cli: Any) -> dict[str, str]:
    """The database the installed server uses (its default under HOME: the clients pass it no CTXKEEP_DB), for the
    hooks too, so both see one store."""
    return {"CTXKEEP_DB": str(default_db_path({"HOME": str(cli.home)}))}


async def _stored(db: Path, project: str, task_id: str) -> Any:
    store = await open_store(db)
    try:
        return await checkpoint.checkpoint_load(Scope(store=store, project=project), task_id)
    finally:
        await store.close()


def _save_then_load() -> list[Any]:
    return [
        call("checkpoint_save", {"task_id": "proc", "state": procurement_state()}),
        call("checkpoint_load", {"task_id": "proc"}),
        text("resumed"),
    ]


def test_codex_install_lists_the_tools_injects_at_resume_saves_loads_and_uninstall_restores_the_bytes(
    tmp_path: Path,
) -> None:
    with codex(tmp_path, _save_then_load() + [text("Continuing the procurement task.")], ctxkeep=False) as cli:
        original = cli.config_toml.read_bytes()
        _ctxkeep(cli, "install", "codex")
        assert (cli.codex_home / "hooks.json").exists() and b"[mcp_servers.ctxkeep]" in cli.config_toml.read_bytes()
        trust = "--dangerously-bypass-hook-trust"
        first = cli.run("Save the procurement task, then load it back. Never email the suppliers.", trust, env=_db(cli))
        assert first.returncode == 0, first.stderr[-3000:]
        requests = cli.requests()
        assert set(cli.tools(requests[0].body)) >= FIXED, "ctxkeep's tools are in the very first request"
        saved, loaded = cli.tool_results(requests[-1].body)[-2:]
        resumed = subprocess.run(
            [str(cli.executable()), "exec", "resume", "--last", "--json", "--skip-git-repo-check", trust, "Carry on."],
            cwd=cli.proj,
            env=cli.env() | _db(cli),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        after = cli.requests()[len(requests) :]
        _ctxkeep(cli, "uninstall", "codex")
        assert cli.config_toml.read_bytes() == original and not (cli.codex_home / "hooks.json").exists()

    assert "refused" not in saved and "Compare 20 supplier quotes" in loaded
    injected = cli.instructions(after[0].body)
    assert RESTORED in injected and "Never email the suppliers" in injected, injected[-3000:]
    stored = anyio.run(_stored, Path(_db(cli)["CTXKEEP_DB"]), str(cli.proj), "proc")
    assert stored.version == 1 and stored.state.pending == ["Supplier C freight missing"]


def test_gemini_install_lists_the_tools_injects_at_resume_saves_loads_and_uninstall_restores_the_bytes(
    tmp_path: Path,
) -> None:
    with gemini(tmp_path, _save_then_load() + [text("Continuing the procurement task.")], ctxkeep=False) as cli:
        original = cli.settings_path.read_bytes()
        _ctxkeep(cli, "install", "gemini")
        installed = json.loads(cli.settings_path.read_text())
        assert installed["mcpServers"]["ctxkeep"]["args"] == ["serve"] and "AfterTool" in installed["hooks"]
        first = cli.run("Save the procurement task, then load it back. Never email the suppliers.", env=_db(cli))
        assert first.returncode == 0, first.stderr[-3000:]
        requests = cli.requests()
        assert set(cli.tools(requests[0].body)) >= FIXED, "ctxkeep's tools are in the very first request"
        saved, loaded = cli.tool_results(requests[-1].body)[-2:]
        resumed = cli.run("Carry on.", "--resume", "latest", env=_db(cli))
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        after = cli.requests()[len(requests) :]
        _ctxkeep(cli, "uninstall", "gemini")
        assert cli.settings_path.read_bytes() == original

    assert "refused" not in saved and "Compare 20 supplier quotes" in loaded
    injected = cli.instructions(after[0].body)
    assert RESTORED in injected and "Never email the suppliers" in injected, injected[-3000:]
    stored = anyio.run(_stored, Path(_db(cli)["CTXKEEP_DB"]), str(cli.proj), "proc")
    assert stored.version == 1 and stored.state.pending == ["Supplier C freight missing"]


def test_codex_auto_compaction_gets_the_repair_of_what_its_summary_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mock_openai.report_usage_once(monkeypatch, 90_000)  # so Codex compacts
    script = [call("exec_command", {"cmd": "echo building"}), text("Done.")]
    with codex(tmp_path, script, ctxkeep=False) as cli:
        # a root key: Codex.extra_toml lands after the harness's last table, where it would be that table's key
        cli.config_toml.write_text("model_auto_compact_token_limit = 5000\n" + cli.config_toml.read_text())
        _ctxkeep(cli, "install", "codex")
        done = cli.run("Fix the login bug. Never push to main.", "--dangerously-bypass-hook-trust", env=_db(cli))
        assert done.returncode == 0, done.stderr[-3000:]
        compactions = cli.requests("compact")
        after = cli.requests()[-1].body

    assert compactions, "Codex compacted (the mock's summary leaves the user's rule out)"
    repaired = cli.instructions(after).partition("ctxkeep checked the compaction summary")
    assert repaired[1] and "Never push to main" in repaired[2], repaired[0][-3000:]


def test_gemini_compression_gets_the_repair_of_what_its_snapshot_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.e2e import mock_gemini

    tokens = [10]
    monkeypatch.setattr(
        mock_gemini,
        "_usage",
        lambda n=10: {"promptTokenCount": tokens[0], "candidatesTokenCount": 5, "totalTokenCount": tokens[0] + 5},
    )
    script = [text("Noted."), call("checkpoint_list", {}), call("checkpoint_list", {}), text("Done.")]
    with gemini(tmp_path, script, ctxkeep=False) as cli:
        settings = json.loads(cli.settings_path.read_text())
        settings["model"]["compressionThreshold"] = 0.1
        cli.write_settings(settings)
        _ctxkeep(cli, "install", "gemini")
        first = cli.run("Fix the login bug. Never push to main.", env=_db(cli))
        assert first.returncode == 0, first.stderr[-3000:]
        tokens[0] = 900_000  # the resumed session is over the threshold: Gemini compresses before its next model call
        second = cli.run("Carry on.", "--resume", "latest", env=_db(cli))
        assert second.returncode == 0, second.stderr[-3000:]
        snapshots = [r for r in cli.requests("side") if "state_snapshot" in json.dumps(r.body)]
        last = cli.requests()[-1].body

    assert snapshots, "Gemini compressed (the mock's snapshot leaves the user's rule out)"
    repaired = "\n".join(cli.tool_results(last)).partition(
        "ctxkeep checked the compaction summary"
    )  # on the tool result
    assert repaired[1] and "Never push to main" in repaired[2], repaired[0][-3000:]


def _trust_codex_hooks(cli: Any) -> list[dict[str, Any]]:
    """Trust the installed hooks the way Codex's /hooks screen does (`codex app-server`: hooks/list, then
    config/batchWrite of hooks.state); returns the hooks as Codex lists them afterwards."""
    proc = subprocess.Popen(
        [str(cli.executable()), "app-server"],
        cwd=cli.proj,
        env=cli.env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    counter = [0]

    def rpc(method: str, params: dict[str, Any]) -> Any:
        counter[0] += 1
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "id": counter[0], "method": method, "params": params}) + "\n")  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]
        while True:
            message = json.loads(proc.stdout.readline())  # type: ignore[union-attr]
            if message.get("id") == counter[0]:
                assert "error" not in message, message
                return message["result"]

    try:
        rpc("initialize", {"clientInfo": {"name": "ctxkeep-test", "version": "0"}})
        proc.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "initialized"}) + "\n")
        proc.stdin.flush()
        hooks = [h for group in rpc("hooks/list", {"cwds": [str(cli.proj)]})["data"] for h in group["hooks"]]
        state = {h["key"]: {"trusted_hash": h["currentHash"]} for h in hooks if h["trustStatus"] != "trusted"}
        rpc("config/batchWrite", {"edits": [{"keyPath": "hooks.state", "value": state, "mergeStrategy": "upsert"}]})
        return [h for group in rpc("hooks/list", {"cwds": [str(cli.proj)]})["data"] for h in group["hooks"]]
    finally:
        proc.stdin.close()
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_doctor_tells_codex_hooks_not_yet_trusted_as_codex_itself_does(tmp_path: Path) -> None:
    from ctxkeep.clients.codex.doctor import checks

    with codex(tmp_path, [], ctxkeep=False) as cli:
        _ctxkeep(cli, "install", "codex")
        env = {"HOME": str(cli.home), "CODEX_HOME": str(cli.codex_home)}
        before = {c.name for c in checks(cli.proj, env)}
        listed = _trust_codex_hooks(cli)
        after = {c.name: c for c in checks(cli.proj, env)}

    assert "codex hook trust (user)" in before
    assert len(listed) == 5 and all(h["trustStatus"] == "trusted" for h in listed), listed
    assert "codex hook trust (user)" not in after and all(c.status in ("ok", "info") for c in after.values()), after
