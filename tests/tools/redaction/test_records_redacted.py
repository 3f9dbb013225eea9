"""Session records hold no secret in clear: a prompt, a command, an error line, a todo, a plan or a quoted rule is
redacted as evidence is, before anything is cut, on the hooks' fast path and in the worker that reads a transcript."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxkeep.clients.core.capture import MAX_TEXT, Known, Record, ToolEvent, from_assistant, from_prompt, from_tool
from tests.claude_home import Claude, bash, tool_result, tool_use, user
from tests.secret_samples import SECRETS, Sample, found_in

AT = "2026-11-30T10:00:00Z"
TOKEN = "ghp_" + "Zq8vR2mK5wx7Lp4Vn8Rt1Zy6Hb0cD3eF9gHj"  # 36 characters, as GitHub issues them
PASSWORD = "Vq7#pL2x!Rm9sK4w"


def _records_of(text: str) -> list[Record]:
    known = Known()
    events = [
        ToolEvent("Bash", {"command": text}, text, True, "toolu_1", AT),  # the command, its check, its error line
        ToolEvent("Bash", {"command": f"pytest -q # {text}"}, f"FAILED {text}", False, "toolu_2", AT),
        ToolEvent("TodoWrite", {"todos": [{"content": text, "status": "pending"}]}, "", False, "toolu_3", AT),
        ToolEvent("TaskCreate", {"subject": text}, "Task #7 created", False, "toolu_4", AT),
        ToolEvent("ExitPlanMode", {"plan": text}, "", False, "toolu_5", AT),
        ToolEvent("Read", {"file_path": "/repo/SPEC.md"}, f"## Rules\n- {text}\n", False, "toolu_6", AT),
    ]
    records = from_prompt(text, AT) + from_assistant(f"I looked at the configuration and found this: {text}", AT)
    for event in events:
        records += from_tool(event, known)
    return records


@pytest.mark.parametrize("sample", SECRETS, ids=[sample.name for sample in SECRETS])
def test_no_record_holds_a_realistic_secret(sample: Sample) -> None:
    records = _records_of(sample.text)
    assert records, "the sample made no record to check"
    stored = json.dumps([list(record) for record in records], ensure_ascii=False).encode()
    assert found_in(stored, list(sample.secrets)) == []


def test_a_secret_that_straddles_the_cut_leaves_no_part_behind() -> None:
    prompt = "x " * ((MAX_TEXT - 20) // 2) + f"export GITHUB_TOKEN={TOKEN} and go on"
    (record,) = from_prompt(prompt, AT)
    assert len(record.text) <= MAX_TEXT
    assert not any(TOKEN[:n] in record.text for n in range(8, len(TOKEN) + 1))


def _database(claude: Claude) -> bytes:
    wal = claude.db.with_name(claude.db.name + "-wal")
    return claude.db.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def test_the_hooks_and_the_worker_store_no_secret(tmp_path: Path) -> None:
    claude = Claude(tmp_path)
    claude.prompt(f"deploy with export GITHUB_TOKEN={TOKEN} please")
    claude.post_tool_use(
        *bash(f"mysql -p{PASSWORD} -e 'select 1'", f"ERROR 1045: denied for password {PASSWORD}"), use_id="toolu_1"
    )
    claude.append(
        user(f"the staging DB_PASSWORD={PASSWORD} works"),
        tool_use("Bash", {"command": f"curl -H 'Authorization: Bearer {TOKEN}' https://api.example.org"}, "toolu_9"),
        tool_result("toolu_9", f"401 for token {TOKEN}", error=True),
    )
    claude.pre_compact()  # the detached worker reads the transcript into the same records
    texts = " ".join(str(row) for row in claude.rows("SELECT key, text, source FROM session_records"))
    assert "GITHUB_TOKEN=[REDACTED" in texts and "mysql -p[REDACTED" in texts, texts[:2000]
    assert found_in(_database(claude), [TOKEN, PASSWORD]) == []
