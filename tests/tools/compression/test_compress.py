"""compress_history: bands, offload fidelity, pairs kept, digests that name what was edited, formats, paths."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from ctxkeep.models.compress import CompressRequest, CompressResult
from ctxkeep.models.evidence import EvidenceGetRequest
from ctxkeep.tools.compression.compress import compress_history
from ctxkeep.tools.evidence.get import evidence_get
from ctxkeep.tools.shared.messages import parse
from ctxkeep.tools.redaction.redact import redact_secrets
from ctxkeep.tools.shared.tool_outputs import says_nothing
from ctxkeep.tools.scope import Scope
from tests.conftest import tool_text
from ctxkeep.storage import open_store
from tests.paths import TESTS

pytestmark = pytest.mark.anyio
DATA = TESTS.parent.parent / "shared" / "data"
needs_data = pytest.mark.skipif(not DATA.is_dir(), reason=f"{DATA} is absent: real-data tests need ../shared/data")
SWE_RUNS = sorted((DATA / "swe-trajectories").glob("*.traj.json")) if DATA.is_dir() else []
LONG_TRANSCRIPTS = ["258c7280-ae70-4798-800f-63464d01a85d.jsonl", "4d5611e5-241a-462a-8d15-5122611a9569.jsonl"]
ENV = {"HOME": "/nonexistent-home", "CTXKEEP_ALLOWED_ROOTS": str(DATA)}


async def full_content(scope: Scope, ref: str) -> str:
    parts, chunk = [], 0
    while True:
        part = await evidence_get(scope, EvidenceGetRequest(ref=ref, mode="chunk", chunk=chunk, max_tokens=25_000))
        parts.append(part.content)
        if part.next is None:
            return "".join(parts)
        chunk += 1


def edited_in_swe(messages: list[dict[str, Any]]) -> set[str]:
    """Files a mini-swe-agent run edited, derived independently: sed -i, cat/echo redirections, heredocs,
    in commands that ran (the next message carries their return code)."""
    paths: set[str] = set()
    for message, answer in zip(messages, messages[1:], strict=False):
        if message["role"] != "assistant" or "<returncode>" not in answer["content"]:
            continue
        for command in re.findall(r"```bash\n(.*?)```", message["content"], re.DOTALL):
            paths.update(re.findall(r"\bsed -i(?:\s+-\S+)*\s+(?:'[^']*'|\"[^\"]*\")\s+(\S+)", command))
            paths.update(re.findall(r"(?:cat|echo)\b[^\n>]*>\s*([\w./-]+)", command))
    return {p for p in paths if not p.startswith("/dev/")}


def edited_in_transcript(messages: list[dict[str, Any]]) -> set[str]:
    return {
        block["input"]["file_path"]
        for m in messages
        for block in m["content"]
        if isinstance(block, dict)
        and block.get("type") == "tool_use"
        and block.get("name") in ("Edit", "Write", "MultiEdit")
        and "file_path" in block.get("input", {})
    }


def pairs_intact(messages: list[dict[str, Any]]) -> bool:
    calls: set[str] = set()
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if block.get("type") == "tool_use":
                calls.add(block["id"])
            if block.get("type") == "tool_result" and block["tool_use_id"] not in calls:
                return False
    return True


def _worth_keeping(messages: list[Any]) -> list[str]:
    """The outputs compress_history keeps as evidence, in order: all but edit confirmations and answers to calls of
    tools that do not exist (`tools.shared.tool_outputs.says_nothing`), each paired with its call as compress does."""
    calls: dict[str | None, Any] = {}
    last = None
    kept = []
    for message in messages:
        for call in message.calls:
            calls[call.id] = last = call
        for output in message.outputs:
            call = calls.get(output.call_id) if output.call_id is not None else last
            if not says_nothing(call.name if call is not None else "unknown_tool", output.text, output.is_error):
                kept.append(output.text)
    return kept


async def check_offloads(scope: Scope, raw: list[dict[str, Any]], result: CompressResult, fmt: str) -> None:
    parsed = parse(raw, fmt)  # type: ignore[arg-type]
    first, last = (
        result.bands["digest"][0] if result.bands["digest"] else result.bands["shaped"][0],
        result.bands["shaped"][1],
    )
    outputs = _worth_keeping(parsed[first : last + 1])
    assert len(result.evidence_refs) == len(outputs)
    for ref, text in zip(result.evidence_refs, outputs, strict=True):
        assert await full_content(scope, ref) == redact_secrets(text)[0]


@needs_data
@pytest.mark.slow
@pytest.mark.parametrize("run", SWE_RUNS, ids=[p.name.split(".")[0] for p in SWE_RUNS])
async def test_swe_runs_compress_with_nothing_lost(scope: Scope, run: Path) -> None:
    raw = json.loads(run.read_text())["messages"]
    result = await compress_history(scope, CompressRequest(messages=raw, task_id="swe"))
    assert result.format == "generic"
    messages = result.messages or json.loads(await full_content(scope, result.messages_ref or ""))
    recent = result.bands["recent"]
    assert messages[-(recent[1] - recent[0] + 1) :] == raw[recent[0] :]
    assert messages[:2] == raw[:2]  # system prompt and task statement pinned
    assert result.span_tokens_after < result.span_tokens_before
    await check_offloads(scope, raw, result, "generic")
    digest_band = raw[result.bands["digest"][0] : result.bands["digest"][1] + 1] if result.bands["digest"] else []
    for path in edited_in_swe(digest_band):
        assert path in result.digest, path


@needs_data
@pytest.mark.slow
def test_swe_span_reduction_median_is_at_least_85_percent(tmp_path: Path) -> None:
    import statistics

    import anyio

    async def reductions() -> list[float]:
        store = await open_store(tmp_path / "r.db")
        scope = Scope(store=store, project="/swe")
        out = []
        for run in SWE_RUNS:
            result = await compress_history(scope, CompressRequest(messages=json.loads(run.read_text())["messages"]))
            out.append(1 - result.span_tokens_after / result.span_tokens_before)
        await store.close()
        return out

    assert statistics.median(anyio.run(reductions)) >= 0.85


@needs_data
@pytest.mark.slow
@pytest.mark.parametrize("name", LONG_TRANSCRIPTS)
async def test_long_transcripts_compress_by_95_percent_with_nothing_lost(scope: Scope, name: str) -> None:
    from ctxkeep.tools.compression.transcript import read_transcript

    path = DATA / "claude-code-transcripts" / name
    result = await compress_history(scope, CompressRequest(transcript_path=str(path), task_id="cc"), env=ENV)
    raw = read_transcript(path).messages
    assert result.format == "claude_code" and result.skipped_records > 0
    assert 1 - result.span_tokens_after / result.span_tokens_before >= 0.95
    messages = result.messages or json.loads(await full_content(scope, result.messages_ref or ""))
    assert pairs_intact(messages)
    recent = result.bands["recent"]
    assert messages[-(recent[1] - recent[0] + 1) :] == raw[recent[0] :]
    await check_offloads(scope, raw, result, "claude_code")
    digest_band = raw[result.bands["digest"][0] : result.bands["digest"][1] + 1]
    for path_edited in edited_in_transcript(digest_band):
        assert path_edited in result.digest, path_edited


OPENAI = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the failing test in app.py"},
    *[
        m
        for i in range(6)
        for m in (
            {
                "role": "assistant",
                "content": f"step {i}",
                "tool_calls": [
                    {
                        "id": f"c{i}",
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": f"pytest -k t{i}"})},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": f"c{i}",
                "content": f"FAILED test_{i}\nAssertionError at app.py:{10 + i}\n" + "x\n" * 200,
            },
        )
    ],
    {"role": "assistant", "content": "Done for now."},
]
ANTHROPIC = [
    {"role": "user", "content": "Fix the failing test in app.py"},
    *[
        m
        for i in range(6)
        for m in (
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"step {i}"},
                    {"type": "tool_use", "id": f"t{i}", "name": "Bash", "input": {"command": f"pytest -k t{i}"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"t{i}",
                        "content": [{"type": "text", "text": f"1 failed\nValueError in app.py:{i}\n" + "y\n" * 200}],
                    }
                ],
            },
        )
    ],
]
GENERIC = [
    {"role": "system", "content": "You are a shell agent."},
    {"role": "user", "content": "Fix app.py"},
    *[
        m
        for i in range(6)
        for m in (
            {"role": "assistant", "content": f"THOUGHT: try {i}\n```bash\nsed -i 's/a/b/' src/file_{i}.py\n```"},
            {"role": "user", "content": f"<returncode>{i % 2}</returncode>\n<output>\n" + "z\n" * 200 + "</output>"},
        )
    ],
]


@pytest.mark.parametrize(("fmt", "history"), [("openai", OPENAI), ("anthropic", ANTHROPIC), ("generic", GENERIC)])
async def test_each_format_keeps_its_shape_and_its_pairs(scope: Scope, fmt: str, history: list[dict[str, Any]]) -> None:
    result = await compress_history(scope, CompressRequest(messages=history, keep_recent=3, shape_window=2))
    assert result.format == fmt and result.messages is not None
    assert result.messages[-3:] == history[-3:]
    assert result.tokens_after < result.tokens_before
    if fmt == "openai":
        seen = {c["id"] for m in result.messages for c in m.get("tool_calls", [])}
        assert all(m["tool_call_id"] in seen for m in result.messages if m["role"] == "tool")
    if fmt == "anthropic":
        assert pairs_intact(result.messages)
    await check_offloads(scope, history, result, fmt)
    again = await compress_history(scope, CompressRequest(messages=history, keep_recent=3, shape_window=2))
    assert json.dumps(again.model_dump(mode="json"), sort_keys=True) == json.dumps(
        result.model_dump(mode="json"), sort_keys=True
    )


async def test_the_generic_digest_names_edited_files_and_exit_codes(scope: Scope) -> None:
    result = await compress_history(scope, CompressRequest(messages=GENERIC, keep_recent=2, shape_window=0))
    for i in range(5):
        assert f"src/file_{i}.py" in result.digest
    assert "exit 1" in result.digest and "exit 0" in result.digest


def write_transcript(path: Path, lines: list[str]) -> None:
    path.write_text("\n".join(lines))


async def test_malformed_and_partial_transcript_records_are_skipped(scope: Scope, tmp_path: Path) -> None:
    records = [
        json.dumps({"type": "progress", "data": {}}),
        json.dumps({"type": "user", "message": {"role": "user", "content": "Fix the bug"}}),
        json.dumps(
            {
                "type": "assistant",
                "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Looking"}]},
            }
        ),
        json.dumps(
            {
                "type": "assistant",
                "message": {
                    "id": "m1",
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "u1", "name": "Read", "input": {"file_path": "a.py"}}],
                },
            }
        ),
        json.dumps(
            {
                "type": "user",
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "u1", "content": "print(1)"}],
                },
            }
        ),
        "not json at all",
        json.dumps(["a list"]),
        json.dumps({"type": "mystery-record", "x": 1}),
        '{"type": "assistant", "message": {"id": "m2", "role": "assist',  # truncated last line
    ]
    path = tmp_path / "t.jsonl"
    write_transcript(path, records)
    result = await compress_history(
        scope, CompressRequest(transcript_path=str(path), keep_recent=8), env={"CTXKEEP_ALLOWED_ROOTS": str(tmp_path)}
    )
    assert result.skipped_records == 5
    assert result.messages is not None and len(result.messages) == 3
    assert result.messages[1]["content"][1]["type"] == "tool_use"  # two records of one reply became one message


async def test_transcript_paths_outside_the_allowed_roots_are_refused(scope: Scope, tmp_path: Path) -> None:
    from ctxkeep.errors import InvalidInput, NotFound

    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    allowed.mkdir()
    outside.mkdir()
    secret = outside / "secret.jsonl"
    write_transcript(secret, [json.dumps({"type": "user", "message": {"role": "user", "content": "x"}})])
    os.symlink(secret, allowed / "link.jsonl")
    env = {"CTXKEEP_ALLOWED_ROOTS": str(allowed), "HOME": "/nonexistent-home"}
    for path in (str(secret), str(allowed / ".." / "outside" / "secret.jsonl"), str(allowed / "link.jsonl")):
        with pytest.raises(InvalidInput, match="outside the allowed roots"):
            await compress_history(scope, CompressRequest(transcript_path=path), env=env)
    with pytest.raises(NotFound, match="is not a file"):
        await compress_history(scope, CompressRequest(transcript_path=str(allowed / "missing.jsonl")), env=env)
    (allowed / "notes.txt").write_text("just some notes\nnot json\n")
    with pytest.raises(InvalidInput, match="not a JSONL transcript"):
        await compress_history(scope, CompressRequest(transcript_path=str(allowed / "notes.txt")), env=env)


async def test_a_summary_is_checked_against_the_checkpoint(client: Client) -> None:
    state = {
        "goal": "Fix the failing test in app.py",
        "pending": ["Rerun the suite"],
        "constraints": ["Do not modify the tests"],
        "facts": [{"key": "failing test", "value": "test_3"}],
    }
    await client.call_tool("checkpoint_save", {"task_id": "fix", "state": state})
    args = {"messages": GENERIC, "task_id": "fix", "keep_recent": 2}
    first = await client.call_tool("compress_history", args)
    assert "Copy exactly: failing test = test_3" in first.structured_content["summary_request"]
    bad = await client.call_tool("compress_history", {**args, "summary": "Fixed everything, tests can be modified."})
    assert bad.structured_content["verification"]["ok"] is False
    assert {v["rule"] for v in bad.structured_content["verification"]["violations"]} >= {
        "summary_goal_missing",
        "summary_pending_missing",
    }
    good = (
        "Goal: Fix the failing test in app.py. Do not modify the tests. Pending: Rerun the suite. "
        "The failing test is test_3."
    )
    ok = await client.call_tool("compress_history", {**args, "summary": good})
    assert ok.structured_content["verification"] == {"ok": True, "violations": []}
    assert "summary accepted" in tool_text(ok)


async def test_bad_compress_input_is_a_clear_error(client: Client) -> None:
    for args, expected in (
        ({}, "send one of messages"),
        ({"messages": GENERIC, "transcript": "{}"}, "send one of messages"),
        ({"transcript": "not json\nat all"}, "the transcript is not a JSONL transcript"),
        ({"messages": [{"content": "no role"}]}, "string role"),
        ({"messages": GENERIC, "summary": "s"}, "send task_id of a task"),
        ({"messages": GENERIC, "keep_recent": -1}, "keep_recent: Input should be greater than or equal to 0"),
        ({"transcript_path": "/etc/passwd"}, "outside the allowed roots"),
    ):
        result = await client.call_tool("compress_history", args)
        assert result.is_error and expected in tool_text(result), tool_text(result)
    assert not (await client.call_tool("checkpoint_list", {})).is_error


async def test_a_huge_compressed_history_comes_back_as_a_ref(scope: Scope) -> None:
    big = [{"role": "user", "content": "task"}] + [
        {"role": "assistant", "content": f"note {i} " + "word " * 3_000} for i in range(12)
    ]
    result = await compress_history(scope, CompressRequest(messages=big, keep_recent=10))
    assert result.messages is None and result.messages_ref is not None
    stored = await full_content(scope, result.messages_ref)
    assert json.loads(stored)[-1] == big[-1]


async def _cursor_keys(scope: Scope) -> list[str]:
    from tests.db_dump import query

    location = getattr(scope.store, "url", scope.store.path)  # the PostgreSQL store's URL, else the file
    return [
        str(row[0])
        for row in query(location, "SELECT source, project FROM compress_cursors")
        if row[1] == scope.project
    ]


async def test_compressing_a_grown_history_reuses_the_earlier_offloads(scope: Scope, tmp_path: Path) -> None:

    grown = GENERIC + [
        m
        for i in range(6, 9)
        for m in (
            {"role": "assistant", "content": f"THOUGHT: more {i}\n```bash\ncat > notes_{i}.txt <<'EOF'\nx\nEOF\n```"},
            {"role": "user", "content": f"<returncode>0</returncode>\n<output>\nwrote {i}\n</output>"},
        )
    ]
    first = await compress_history(scope, CompressRequest(messages=GENERIC, task_id="grow", keep_recent=2))
    async with scope.store.snapshot() as tx:
        cursors = [await tx.cursors.get(scope.project, key) for key in await _cursor_keys(scope)]
    assert len(cursors) == 1 and cursors[0] is not None
    assert (
        cursors[0].prefix_count == first.bands["recent"][0] and json.loads(cursors[0].refs_json) == first.evidence_refs
    )
    again = await compress_history(scope, CompressRequest(messages=grown, task_id="grow", keep_recent=2))
    assert again.evidence_refs[: len(first.evidence_refs)] == first.evidence_refs
    other = await open_store(tmp_path / "fresh.db")
    try:
        fresh = await compress_history(
            Scope(store=other, project=scope.project), CompressRequest(messages=grown, task_id="grow", keep_recent=2)
        )
    finally:
        await other.close()
    assert fresh.digest == again.digest  # the same history gives the same digest, with or without a cursor
    same = await compress_history(scope, CompressRequest(messages=GENERIC, task_id="grow", keep_recent=2))
    assert same.digest == first.digest and same.evidence_refs == first.evidence_refs


async def test_semantic_boundaries_are_reported(scope: Scope) -> None:
    passed = GENERIC + [
        {"role": "assistant", "content": "THOUGHT: run tests\n```bash\npytest -q\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\n12 passed in 0.4s\n</output>"},
    ]
    result = await compress_history(scope, CompressRequest(messages=passed))
    assert result.semantic_boundary is not None and result.semantic_boundary.kind == "verification_passed"
    assert result.semantic_boundary.message_index == len(passed) - 1
    asking = passed + [{"role": "assistant", "content": "The fix is ready. Do you approve the deploy to production?"}]
    result = await compress_history(scope, CompressRequest(messages=asking))
    assert result.semantic_boundary is not None and result.semantic_boundary.kind == "approval_requested"
    subagent = ANTHROPIC + [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "s1", "name": "Task", "input": {"description": "research"}}],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "s1", "content": "findings"}]},
    ]
    result = await compress_history(scope, CompressRequest(messages=subagent))
    assert result.semantic_boundary is not None and result.semantic_boundary.kind == "subagent_returned"
    quiet = await compress_history(scope, CompressRequest(messages=ANTHROPIC))
    assert quiet.semantic_boundary is None


async def test_the_digest_says_whether_a_later_step_resolved_an_error(scope: Scope) -> None:
    run = [
        {"role": "system", "content": "agent"},
        {"role": "user", "content": "Fix it"},
        {"role": "assistant", "content": "```bash\npytest -q\n```"},
        {
            "role": "user",
            "content": "<returncode>1</returncode>\n<output>\n"
            + "collecting tests\n" * 80
            + "ValueError: bad freight\n</output>",
        },
        {"role": "assistant", "content": "```bash\npython check_other.py\n```"},
        {
            "role": "user",
            "content": "<returncode>1</returncode>\n<output>\n" + "checking\n" * 80 + "KeyError: 'x'\n</output>",
        },
        {"role": "assistant", "content": "```bash\npytest -q\n```"},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\n3 passed\n</output>"},
    ]
    result = await compress_history(scope, CompressRequest(messages=run, keep_recent=0, shape_window=0))
    assert "ValueError (message 3; resolved at message 7)" in result.digest
    assert "KeyError (message 5; not seen resolved)" in result.digest


@pytest.mark.parametrize(
    "history",
    [
        [
            {"role": "user", "content": "task"},
            {"role": "tool", "tool_call_id": "gone", "content": "trimmed call's output"},
            *[{"role": "assistant", "content": f"a{i}"} for i in range(3)],
        ],
        [
            {"role": "user", "content": "task"},
            {"role": "assistant", "content": "x", "tool_calls": ["junk", {"function": "ls"}, 7]},
            {"role": "user", "content": "more"},
        ],
        [{"role": "user", "content": "task"}, {"role": "assistant", "content": "x", "tool_calls": 7}],
        [
            {"role": "user", "content": [{"type": "text", "text": "task"}]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "half an emoji \ud83d"}],
            },
            *[{"role": "assistant", "content": [{"type": "text", "text": f"a{i}"}]} for i in range(3)],
        ],
        [{"role": "system", "content": "only a system prompt"}],
        [{"role": "user", "content": None}, {"role": "assistant", "content": 42}],
    ],
)
async def test_odd_histories_compress_without_crashing(scope: Scope, history: list[dict[str, Any]]) -> None:
    result = await compress_history(scope, CompressRequest(messages=history, keep_recent=1, shape_window=1))
    assert result.messages is not None and result.messages[-1] == history[-1]


async def test_nothing_folded_into_the_digest_is_out_of_reach(scope: Scope) -> None:
    history = GENERIC[:4] + [{"role": "system", "content": "IMPORTANT: never touch the prod DB"}] + GENERIC[4:]
    result = await compress_history(scope, CompressRequest(messages=history, keep_recent=2, shape_window=0))
    assert "IMPORTANT: never touch the prod DB" in result.digest
    band_ref = re.search(r"the messages verbatim: (ev_[0-9a-f]+)", result.digest)
    assert band_ref is not None
    first, last = result.bands["digest"]
    assert json.loads(await full_content(scope, band_ref.group(1))) == history[first : last + 1]


async def test_the_digest_ignores_errors_in_successful_reads_and_harness_reminders(scope: Scope) -> None:
    history = [
        {"role": "system", "content": "agent"},
        {"role": "user", "content": "Fix it"},
        {"role": "assistant", "content": "```bash\ngrep -n AttributeError src/app.py\n```"},
        {
            "role": "user",
            "content": "<returncode>0</returncode>\n<output>\n12: except (KeyError, AttributeError):\n</output>",
        },
        {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."},
        {"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 2 actions."},
        {"role": "assistant", "content": '```bash\npython -c "print(1 > 0)" && str_replace_view\n```'},
        {"role": "user", "content": "<returncode>0</returncode>\n<output>\nTrue\n</output>"},
        {"role": "assistant", "content": "done"},
    ]
    result = await compress_history(scope, CompressRequest(messages=history, keep_recent=1, shape_window=0))
    assert "AttributeError" not in result.digest.split("## Commands run")[0]
    assert "EXACTLY ONE action" not in result.digest
    assert "## Files edited" not in result.digest


async def test_the_cursor_is_not_trusted_for_deleted_evidence(scope: Scope) -> None:
    from ctxkeep.tools.evidence.records import evidence_delete

    first = await compress_history(scope, CompressRequest(messages=GENERIC, task_id="c", keep_recent=2))
    await evidence_delete(scope, first.evidence_refs[0])
    again = await compress_history(scope, CompressRequest(messages=GENERIC, task_id="c", keep_recent=2))
    assert await full_content(scope, again.evidence_refs[0]) == redact_secrets(GENERIC[3]["content"])[0]


async def test_unusable_transcript_paths_are_clear_errors(scope: Scope, tmp_path: Path) -> None:
    from ctxkeep.errors import InvalidInput

    env = {"CTXKEEP_ALLOWED_ROOTS": str(tmp_path)}
    for path in ("bad\x00name.jsonl", "x" * 300 + ".jsonl"):
        with pytest.raises(InvalidInput):
            await compress_history(scope, CompressRequest(transcript_path=str(tmp_path / path)), env=env)
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(InvalidInput, match="not a JSONL transcript"):
        await compress_history(scope, CompressRequest(transcript_path=str(tmp_path / "empty.jsonl")), env=env)


async def test_blocks_that_carry_no_text_still_count_for_the_inline_limit(scope: Scope) -> None:
    thinking = [{"role": "user", "content": "task"}] + [
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "ponder " * 4_000, "signature": "s"},
                {"type": "text", "text": f"step {i}"},
            ],
        }
        for i in range(8)
    ]
    result = await compress_history(scope, CompressRequest(messages=thinking, keep_recent=8))
    assert result.messages is None and result.messages_ref is not None


async def test_short_tool_outputs_are_not_replaced_by_longer_previews(scope: Scope) -> None:
    history = [{"role": "user", "content": "task"}] + [
        m
        for i in range(4)
        for m in (
            {"role": "assistant", "content": f"```bash\necho {i}\n```"},
            {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{i}\n</output>"},
        )
    ]
    result = await compress_history(scope, CompressRequest(messages=history, keep_recent=2, shape_window=4))
    assert result.messages is not None and result.span_tokens_after <= result.span_tokens_before
    assert "ctxkeep: full output stored" not in json.dumps(result.messages)
