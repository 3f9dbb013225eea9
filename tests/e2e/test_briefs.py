"""The two briefs with the real CLIs, ctxkeep installed the way a user installs it (`ctxkeep install <client>`):

- Claude Code's compaction, by `/compact` and automatic: the summarization request the mock receives carries
  ctxkeep's PreCompact brief (Claude Code adds a PreCompact hook's stdout to the compaction prompt's "Additional
  Instructions"), the user's negated rule verbatim; and what Claude Code shows the user of it (`/compact`'s output,
  kept in the transcript);
- a brand-new session (not a resume) in Claude Code, Codex and Gemini: its first model request holds the startup brief
  of the open work an earlier session left (the rule, the saved task, its pending work and the call that loads it);
- Codex's compaction and Gemini's compression take nothing from a pre-compaction hook (checked with a probe hook that
  prints a marker in every output shape): ctxkeep's hooks print nothing there, and docs/clients.md says so.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ctxkeep.project import default_db_path
from tests.conftest import procurement_state
from tests.e2e.clients import claude_code, codex, gemini
from tests.e2e.mock_api import call, text

pytestmark = pytest.mark.slow
CTXKEEP = str(Path(sys.executable).parent / "ctxkeep")
RULE = "Never push to main; open a pull request instead"
BRIEF = "ctxkeep: the session's records hold the items below."
STARTUP = "ctxkeep: this project's earlier work, from its records"
PROBE = Path(__file__).resolve().parent / "probe_hook.py"


def _install(cli: Any, client: str, env: dict[str, str] | None = None) -> None:
    done = subprocess.run(
        [CTXKEEP, "install", client, *(["--scope", "local"] if client == "claude-code" else [])],
        cwd=cli.proj,
        env=cli.env() | (env or {}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


def _db(cli: Any) -> dict[str, str]:
    """The database an installed server uses (its default under HOME: Codex and Gemini pass it no CTXKEEP_DB), for
    the hooks too, so both see one store."""
    return {"CTXKEEP_DB": str(default_db_path({"HOME": str(cli.home)}))}


def _log(cli: Any, db: str | None = None) -> str:
    """The hook log, beside the database the hooks used (the harness's, unless `db` names the installed one)."""
    path = Path(db or cli.db).parent / "ctxkeep-hooks.log"
    return path.read_text() if path.exists() else ""


def _printed(log: str, what: str) -> list[int]:
    """The sizes the hook log gives for `what` ("the startup brief", "the brief for the summary")."""
    return [int(n.replace(",", "")) for n in re.findall(re.escape(what) + r" \(([\d,]+) characters\)", log)]


def _compaction_prompt(body: dict[str, Any]) -> str:
    """The text of the compaction request's last user message (Claude Code's summarization prompt)."""
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content)


def test_claude_code_compaction_request_carries_the_pre_compact_brief(tmp_path: Path) -> None:
    script = [
        call("Bash", {"command": "git status --short", "description": "status"}),
        call("Write", {"file_path": str(tmp_path / "proj" / "app.py"), "content": "login = 'fixed'\n"}),
        text("Edited app.py."),  # the stop the gate blocks once
        text("Not verified yet."),
    ]
    with claude_code(tmp_path, script) as cli:
        _install(cli, "claude-code")
        done = cli.run(f"Fix the login bug in app.py. {RULE}.", timeout=240)
        assert done.returncode == 0, done.stderr[-3000:]
        session = done.json()["session_id"]
        compact = cli.run("/compact", "--resume", session, timeout=240)
        assert compact.returncode == 0, compact.stderr[-3000:]
        compactions = cli.requests("compact")
        transcript = next((cli.config_dir / "projects").glob(f"*/{session}.jsonl")).read_text()
        log = _log(cli)

    assert len(compactions) == 1, "one summarization request for one /compact"
    prompt = _compaction_prompt(compactions[0].body)
    instructions = prompt.partition("Additional Instructions:\n")[2]
    assert instructions.startswith(BRIEF), prompt[-3000:]  # the hook's stdout, where the user's own /compact text goes
    rules = instructions.partition("Rules that must hold")[2]
    assert f"{RULE}." in rules.partition("\n\n")[0]  # the negated rule, verbatim
    assert "app.py" in instructions.partition("State of the work")[2]  # edited, no commit seen, no check since
    brief = instructions.partition("\n\nREMINDER:")[0].strip()
    assert _printed(log, "printed the brief for the summary") == [len(brief) + 1] and len(brief) <= 3_000
    # What the user sees: the /compact command's output, with the whole brief after the hook's command line
    shown = next(
        json.loads(line) for line in transcript.splitlines() if "<local-command-stdout>" in line and BRIEF in line
    )
    stdout = shown["message"]["content"]
    assert f"PreCompact [{CTXKEEP} hook pre-compact] completed successfully: {brief}" in stdout


def test_claude_code_auto_compaction_request_carries_the_pre_compact_brief(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The compaction Claude Code starts itself (the context nearly full) gets the brief the same way; unlike
    `/compact`'s output, it is not kept in the transcript, so the model does not read the brief again afterwards."""
    from tests.e2e import mock_anthropic

    mock_anthropic.report_usage_once(monkeypatch, 990_000)  # of the mock model's 1,000,000-token window
    script = [call("Bash", {"command": "git status --short", "description": "status"}), text("Clean.")]
    with claude_code(tmp_path, script) as cli:
        _install(cli, "claude-code")
        done = cli.run(f"Fix the login bug in app.py. {RULE}.", timeout=240)
        assert done.returncode == 0, done.stderr[-3000:]
        compactions, after = cli.requests("compact"), cli.requests()[1:]

    assert len(compactions) == 1 and after, "Claude Code compacted on its own, then went on"
    instructions = _compaction_prompt(compactions[0].body).partition("Additional Instructions:\n")[2]
    assert instructions.startswith(BRIEF) and f"{RULE}." in instructions
    assert not any(BRIEF in json.dumps(r.body) for r in after)


def _save_the_task(rule_in_task: bool) -> list[Any]:
    """The first session's script: the task saved with its pending work (and the user's rule, where the client's
    hooks record nothing else that would be left open)."""
    state = procurement_state(constraints=[RULE, "No final recommendation before the data is complete"])
    return [call("checkpoint_save", {"task_id": "proc", "state": state if rule_in_task else procurement_state()})]


def _assert_startup_brief(seen: str) -> None:
    assert STARTUP in seen, seen[-3000:]
    brief = seen[seen.index(STARTUP) :]
    assert RULE in brief
    assert 'checkpoint_load(task_id="proc")' in brief and "Supplier C freight missing" in brief
    assert "Ask for Supplier C freight" in brief  # the next action


def test_claude_code_new_session_starts_with_the_startup_brief(tmp_path: Path) -> None:
    script = [
        *_save_the_task(rule_in_task=False),
        call("Write", {"file_path": str(tmp_path / "proj" / "quotes.csv"), "content": "supplier,price\n"}),
        text("Saved; quotes.csv started."),
        text("Not checked yet."),
        text("Starting from the saved task."),
    ]
    with claude_code(tmp_path, script) as cli:
        _install(cli, "claude-code")
        first = cli.run(f"Compare the supplier quotes. {RULE}.", timeout=240)
        assert first.returncode == 0, first.stderr[-3000:]
        before = len(cli.requests())
        second = cli.run("What is next?", timeout=240)  # a new session: no --resume, no --continue
        assert second.returncode == 0, second.stderr[-3000:]
        assert second.json()["session_id"] != first.json()["session_id"]
        opening = cli.requests()[before].body
        log = _log(cli)

    _assert_startup_brief(json.dumps(opening, ensure_ascii=False).replace('\\"', '"').replace("\\n", "\n"))
    assert "Rules the user set" in json.dumps(opening)  # the earlier session's own part: its edit is not committed
    sizes = _printed(log, "injected the startup brief")
    assert len(sizes) == 1 and sizes[0] <= 2_000, log[-2000:]


def test_codex_new_session_starts_with_the_startup_brief(tmp_path: Path) -> None:
    script = [*_save_the_task(rule_in_task=True), text("Saved."), text("Starting from the saved task.")]
    with codex(tmp_path, script, ctxkeep=False) as cli:
        _install(cli, "codex", _db(cli))
        trust = "--dangerously-bypass-hook-trust"
        first = cli.run(f"Save the procurement task. {RULE}.", trust, env=_db(cli))
        assert first.returncode == 0, first.stderr[-3000:]
        assert "refused" not in cli.tool_results(cli.requests()[-1].body)[-1]
        before = len(cli.requests())
        second = cli.run("What is next?", trust, env=_db(cli))  # `codex exec` without `resume`: a new session
        assert second.returncode == 0, second.stderr[-3000:]
        opening = cli.requests()[before].body
        log = _log(cli, _db(cli)["CTXKEEP_DB"])

    _assert_startup_brief(cli.instructions(opening))  # Codex puts additionalContext in a developer message
    sizes = _printed(log, "injected the startup brief")
    assert len(sizes) == 1 and sizes[0] <= 2_000, log[-2000:]


def test_gemini_new_session_starts_with_the_startup_brief(tmp_path: Path) -> None:
    script = [*_save_the_task(rule_in_task=True), text("Saved."), text("Starting from the saved task.")]
    with gemini(tmp_path, script, ctxkeep=False) as cli:
        _install(cli, "gemini", _db(cli))
        first = cli.run(f"Save the procurement task. {RULE}.", env=_db(cli))
        assert first.returncode == 0, first.stderr[-3000:]
        before = len(cli.requests())
        second = cli.run("What is next?", env=_db(cli))  # no --resume: a new session
        assert second.returncode == 0, second.stderr[-3000:]
        opening = cli.requests()[before].body

    seen = "\n".join(p.get("text", "") for c in opening["contents"] for p in c["parts"])  # not the system text
    contexts = re.findall(r"<hook_context>(.*?)</hook_context>", seen, re.DOTALL)
    assert len(contexts) == 1, seen[-3000:]
    shown = contexts[0]  # as Gemini's model reads it: Gemini would HTML-escape `<` and `>`, so ctxkeep sends neither
    _assert_startup_brief(shown)
    assert "&gt;" not in shown and "&lt;" not in shown and "<" not in shown and ">" not in shown
    assert "\u203a Compare 20 supplier quotes" in shown and len(shown) <= 2_000


def _probes(log: Path, event: str, **group: Any) -> list[dict[str, Any]]:
    """One hook group that runs the probe once per output shape (plain text, additionalContext, systemMessage)."""
    hooks = [
        {"type": "command", "command": f"{sys.executable} {PROBE} {log} {event} {shape}", **group}
        for shape in ("text", "context", "system")
    ]
    return [{"hooks": hooks}]


def _markers(requests: list[Any], event: str) -> set[str]:
    return {m for r in requests for m in re.findall(f"PROBE-{event}-[a-z]+", json.dumps(r.body))}


def test_codex_compaction_takes_nothing_from_a_pre_compact_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Codex 0.171 runs PreCompact hooks and ignores their output: plain text is not read, a JSON systemMessage is
    shown to the user as a warning, and neither reaches the compaction request (Codex has no field for it)."""
    from tests.e2e import mock_openai

    mock_openai.report_usage_once(monkeypatch, 90_000)
    log = tmp_path / "probe.jsonl"
    with codex(tmp_path, [call("exec_command", {"cmd": "echo building"}), text("Done.")], ctxkeep=False) as cli:
        cli.config_toml.write_text("model_auto_compact_token_limit = 5000\n" + cli.config_toml.read_text())
        (cli.codex_home / "hooks.json").write_text(
            json.dumps({"hooks": {"PreCompact": _probes(log, "PreCompact", timeout=30)}})
        )
        done = cli.run(f"Fix the login bug. {RULE}.", "--dangerously-bypass-hook-trust")
        assert done.returncode == 0, done.stderr[-3000:]
        compactions, everything = cli.requests("compact"), cli.mock.requests

    ran = [json.loads(line) for line in log.read_text().splitlines()]
    assert compactions and len(ran) == 3 and {r["input"]["trigger"] for r in ran} == {"auto"}
    assert _markers(everything, "PreCompact") == set()


def test_gemini_compression_takes_nothing_from_a_pre_compress_hook(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Gemini CLI 0.61 awaits its PreCompress hooks and drops their result (ChatCompressionService.compress); a
    systemMessage only goes to the debug log, which a headless run prints on stderr."""
    from tests.e2e import mock_gemini

    tokens = [10]
    monkeypatch.setattr(
        mock_gemini,
        "_usage",
        lambda n=10: {"promptTokenCount": tokens[0], "candidatesTokenCount": 5, "totalTokenCount": tokens[0] + 5},
    )
    log = tmp_path / "probe.jsonl"
    read = call("read_file", {"file_path": "notes.txt"})
    with gemini(tmp_path, [text("Noted."), read, read, text("Done.")], ctxkeep=False) as cli:
        (cli.proj / "notes.txt").write_text("the login form posts to /session\n")
        settings = json.loads(cli.settings_path.read_text())
        settings["model"]["compressionThreshold"] = 0.1
        settings["hooks"] = {"PreCompress": _probes(log, "PreCompress", timeout=30_000)}
        cli.write_settings(settings)
        first = cli.run(f"Fix the login bug. {RULE}.")
        assert first.returncode == 0, first.stderr[-3000:]
        tokens[0] = 900_000  # over the threshold: Gemini compresses before its next model call
        second = cli.run("Carry on.", "--resume", "latest")
        assert second.returncode == 0, second.stderr[-3000:]
        snapshots = [r for r in cli.requests("side") if "state_snapshot" in json.dumps(r.body)]
        everything = cli.mock.requests

    assert snapshots and {json.loads(line)["shape"] for line in log.read_text().splitlines()} == {
        "text",
        "context",
        "system",
    }
    assert _markers(everything, "PreCompress") == set()
    assert "Hook system message: PROBE-PreCompress-system" in first.stderr + second.stderr
