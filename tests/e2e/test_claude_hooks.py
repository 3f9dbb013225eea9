"""The real Claude Code CLI with ctxkeep's hooks installed by `ctxkeep install claude-code`: what the model receives.

The scripted model runs a Bash command with a large output, fetches the output back by the ref it was shown, edits a
file and tries to stop; then `/compact` runs. The loopback mock records every request, and the assertions are on
those requests: the hooks fired, the output reached the model shaped with its ref, evidence_get brought back the
exact bytes, the stop after the edit was blocked once and then allowed, and SessionStart's injection followed the
compaction.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.clients import claude_code
from tests.e2e.mock_api import Seen, call, text

pytestmark = pytest.mark.slow
REF = r"ev_[0-9a-f]{24}"


def _install_hooks(cli: object, env: dict[str, str]) -> None:
    exe = Path(sys.executable).parent / "ctxkeep"
    done = subprocess.run(
        [str(exe), "install", "claude-code", "--scope", "local"],
        cwd=cli.proj,  # type: ignore[attr-defined]
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert (cli.proj / ".claude" / "settings.local.json").exists()  # type: ignore[attr-defined]


def _texts(body: dict[str, object]) -> str:
    return json.dumps(body, ensure_ascii=False)


def test_hooks_shape_output_bring_it_back_gate_the_stop_and_repair_after_compact(tmp_path: Path) -> None:
    script = [
        call("Bash", {"command": "seq 1 30000", "description": "numbers"}),
        call("evidence_get", {"ref": Seen(REF), "mode": "full", "max_tokens": 25000}),
        call("Write", {"file_path": str(tmp_path / "proj" / "notes.py"), "content": "print('hi')\n"}),
        text("All done."),  # the stop the gate blocks once
        text("Verified by reading the file: done."),  # the stop after the block is allowed
    ]
    with claude_code(tmp_path, script) as cli:
        _install_hooks(cli, cli.env())
        done = cli.run("Print the numbers, check them, write notes.py, then stop.", timeout=240)
        assert done.returncode == 0, done.stderr[-3000:]
        session = done.json()["session_id"]
        requests = [r.body for r in cli.requests()]
        compact = cli.run("/compact", "--resume", session, timeout=240)
        assert compact.returncode == 0, compact.stderr[-3000:]
        again = cli.run("Carry on.", "--resume", session, timeout=240)  # the first request after the compaction
        assert again.returncode == 0, again.stderr[-3000:]
        after = [r.body for r in cli.requests()][len(requests) :]
        log = (cli.root / "ctxkeep-hooks.log").read_text() if (cli.root / "ctxkeep-hooks.log").exists() else ""

    results = [cli.tool_results(body) for body in requests]
    shaped = next(r[-1] for r in results if r and "[ctxkeep:" in r[-1])
    ref = next(iter(__import__("re").findall(REF, shaped)))
    assert "seq 1 30000" not in shaped and len(shaped) < 8_000 and "29999\n30000" in shaped.replace("\\n", "\n")
    assert f'evidence_get(ref="{ref}"' in shaped
    fetched = next(r[-1] for r in results if r and r[-1].startswith("1\n2\n3\n")).replace("\\n", "\n")
    whole = "\n".join(str(n) for n in range(1, 30001)) + "\n"
    shown = fetched.split("\n\n[more:")[0] + "\n"
    assert len(shown) > 20_000 and whole.startswith(shown)  # the exact bytes came back, as far as one read goes
    assert f"{ref}" in fetched and "mode='lines'" in fetched  # and how to read the rest
    blocked = [b for b in requests if "ctxkeep verification gate" in _texts(b)]
    assert len(blocked) >= 1 and "notes.py" in _texts(blocked[0])
    assert sum("ctxkeep verification gate" in _texts(b) and "Stop hook" in _texts(b) for b in requests) >= 1
    assert done.json()["result"].startswith("Verified")  # blocked once, then allowed
    injected = [
        b for b in after if "ctxkeep checked the compaction summary" in _texts(b) or "ctxkeep restored" in _texts(b)
    ]
    # 2.1.332 writes the summary (and calls PostCompact) after SessionStart(compact): the session start injects the
    # records' view, PostCompact checks the summary and keeps it as the task's summary
    assert "post-compact ok" in log and "summary kept for cc-" in log, log[-2000:]
    assert injected, "SessionStart's injection reaches the model after /compact"
    assert "Print the numbers" in _texts(injected[-1])  # the goal the mock's summary left out
