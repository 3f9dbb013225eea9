"""`ctxkeep demo`: a coding agent's session with ctxkeep in the loop, through the real hooks and the real server.

The session is Claude Code's (`demo_story`): the hook inputs Claude Code sends are fed to `ctxkeep hook <event>`
subprocesses, and an MCP client talks to `ctxkeep serve` over stdio as the agent does. It shows, in order: the user's
rule recorded verbatim; a 180 KB log reaching the model as a short view with the ref that brings the rest back; a
failing test, an edit and a stop the verification gate blocks once; the task saved; Claude Code's compaction summary
checked against the records and the rule and the open step it lost given back; the save of an agent that trusted
the summary refused; a resumed agent getting the state, the exact log line and its next context back; the pull
request journaled and the task's second version saved.

It runs on a temporary database and project unless `--db` names a file (then in this project: `ctxkeep ui` shows
it). Run again on the same file it uses a task and a session of its own (`fix-rate-limiter-2`, …), so every step
behaves the same. Offline; standard input is never read.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ctxkeep.cli import demo_story as story

TASK = "fix-rate-limiter"
SESSION = "demo-session"
STEPS = 7
CLIENTS = "codex, gemini, cursor, vscode, windsurf, cline"
_OFF = ("CTXKEEP_SHAPE", "CTXKEEP_SHAPE_LIMITS", "CTXKEEP_SHAPE_READ", "CTXKEEP_GATE", "CTXKEEP_HOOK_LOG")


def say(line: str = "") -> None:
    print(line, flush=True)


def step(n: int, title: str, how: str) -> None:
    say(f"\n[{n}/{STEPS}] {title}  ({how})")


def indented(text: str, prefix: str = "      ", most: int = 12, width: int = 116) -> str:
    """At most `most` lines of `text` under `prefix`, long lines wrapped at `width` (the rest counted, not cut)."""
    import textwrap

    lines = [line for line in text.strip().splitlines() if line.strip()]
    shown = [
        wrapped
        for line in lines[:most]
        for wrapped in textwrap.wrap(line, width, initial_indent=prefix, subsequent_indent=prefix + "  ")
    ]
    return "\n".join(shown + ([f"{prefix}… {len(lines) - most} more line(s)"] if len(lines) > most else []))


def sections(markdown: str, titles: tuple[str, ...]) -> str:
    """The `## <title>` sections of a markdown text named in `titles`, headings included, in the text's order."""
    kept, keep = [], False
    for line in markdown.splitlines():
        if line.startswith("## "):
            keep = line[3:].strip().startswith(titles)
        if keep and line.strip():
            kept.append(line)
    return "\n".join(kept)


def _text(result: Any) -> str:
    text = "\n".join(block.text for block in result.content if hasattr(block, "text"))
    return ("REFUSED: " if result.is_error else "") + text


class Session:
    """Claude Code's side of the session: its hook inputs, run through `ctxkeep hook <event>` as Claude Code runs them."""

    def __init__(self, folder: Path, project: Path, session_id: str, env: dict[str, str]) -> None:
        self.project, self.session_id, self.env = project, session_id, env
        self.transcript = folder / f"{session_id}.jsonl"
        self.transcript.touch()
        self.uses = 0

    async def hook(self, event: str, hook_event: str, **fields: Any) -> dict[str, Any] | None:
        """Run one hook with Claude Code's input for `hook_event`; what it printed (None when nothing)."""
        import anyio

        data = {
            "session_id": self.session_id,
            "transcript_path": str(self.transcript),
            "cwd": str(self.project),
            "hook_event_name": hook_event,
            **fields,
        }
        done = await anyio.run_process(
            [sys.executable, "-m", "ctxkeep", "hook", event], input=json.dumps(data).encode(), env=self.env, check=False
        )
        out = done.stdout.decode("utf-8", "replace").strip()
        return json.loads(out) if out else None

    async def tool(
        self, name: str, given: dict[str, Any], response: Any, failed: bool = False
    ) -> dict[str, Any] | None:
        self.uses += 1
        use = {"tool_name": name, "tool_input": given, "tool_use_id": f"toolu_demo_{self.uses}"}
        if failed:
            return await self.hook("post-tool-use-failure", "PostToolUseFailure", **use, error=response)
        return await self.hook("post-tool-use", "PostToolUse", **use, tool_response=response)

    def compacted(self, summary: str) -> None:
        """What Claude Code writes to the transcript when it compacts: the boundary, then its summary."""
        records = [
            {"type": "system", "subtype": "compact_boundary", "sessionId": self.session_id},
            {
                "type": "user",
                "sessionId": self.session_id,
                "isCompactSummary": True,
                "message": {
                    "role": "user",
                    "content": "This session is being continued from a previous conversation.\n\n"
                    f"<summary>{summary}</summary>",
                },
            },
        ]
        with self.transcript.open("a", encoding="utf-8") as out:
            out.write("".join(json.dumps(record) + "\n" for record in records))


def _bash(stdout: str) -> dict[str, Any]:
    return {"stdout": stdout, "stderr": "", "interrupted": False, "isImage": False}


async def _own_ids(client: Any) -> tuple[str, str, str]:
    """This run's task and session: `fix-rate-limiter` and `demo-session`, or `-2`, `-3`, … when earlier runs on this
    database left those; and how to say it."""
    for n in range(1, 10_000):
        task = TASK if n == 1 else f"{TASK}-{n}"
        found = await client.call_tool("checkpoint_load", {"task_id": task})
        if found.is_error and f"no task {task!r}" in _text(found):
            earlier = "" if n == 1 else f" (earlier runs left {TASK}{'' if n == 2 else f' to {TASK}-{n - 1}'})"
            return task, SESSION if n == 1 else f"{SESSION}-{n}", earlier
    raise RuntimeError("no free task id for the demo")


async def run_demo(db: str | None = None, project: str | None = None) -> int:
    """Run the demo (on a temporary database and project unless given); returns the exit code (0: all as expected)."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="ctxkeep-demo-") as tmp:
        path = db or str(Path(tmp) / "demo.db")
        workspace = Path(project) if project else Path(tmp) / "shop-api"
        workspace.mkdir(exist_ok=True)
        say("ctxkeep demo: a coding agent fixes a bug with ctxkeep in the loop, through the real hooks and server")
        say(f"  database {path}{'' if db else ' (temporary)'}, project {workspace}")
        say("  starting `ctxkeep serve` over stdio, as an agent client does …")
        ok = await _run(path, workspace, Path(tmp), started)
    say(
        "\ndemo finished: "
        + ("every step behaved as expected" if ok else "UNEXPECTED RESULT, see above")
        + f" ({time.monotonic() - started:.1f} s)."
        + (f" See what the model was shown: CTXKEEP_DB={path} ctxkeep ui" if db else "")
    )
    say(f"Use it in your agent: ctxkeep install claude-code   (or {CLIENTS}; ctxkeep install --list)")
    return 0 if ok else 1


async def _run(path: str, workspace: Path, tmp: Path, started: float) -> bool:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {key: value for key, value in os.environ.items() if key not in _OFF}
    env |= {"CTXKEEP_DB": path, "CTXKEEP_PROJECT": str(workspace)}
    params = StdioServerParameters(command=sys.executable, args=["-m", "ctxkeep", "serve"], env=env)
    async with Client(params) as client:
        tools = await client.list_tools()
        task, session_id, earlier = await _own_ids(client)
        say(f"  server ready in {time.monotonic() - started:.1f} s ({len(tools.tools)} tools); task {task}{earlier}")
        claude = Session(tmp, workspace, session_id, env)
        ref, checks = await _work(claude, workspace)
        checks += await _compaction(client, claude, task, ref)
        checks += await _resume(client, task, ref)
    return all(checks)


async def _work(claude: Session, workspace: Path) -> tuple[str, list[bool]]:
    """Steps 1 to 3, through the hooks alone: the request and the rule, the log, the test, the edit, the gate."""
    step(1, "The user asks for a fix and sets a rule", "UserPromptSubmit hook")
    for prompt in (story.ASK, story.RULE):
        await claude.hook("user-prompt-submit", "UserPromptSubmit", prompt=prompt)
        say(f"  user: {prompt}")
    await claude.tool("TodoWrite", {"todos": story.TODOS}, {"oldTodos": [], "newTodos": story.TODOS})
    say("  → recorded: the request, the rule verbatim (a negation), the agent's todo list")

    step(2, "The agent reads the service's log", "PostToolUse hook")
    log = story.app_log()
    shaped = await claude.tool("Bash", {"command": story.LOG_COMMAND}, _bash(log))
    view = str(((shaped or {}).get("hookSpecificOutput") or {}).get("updatedToolOutput", {}).get("stdout", ""))
    ref = view.split("stored as evidence ", 1)[1].split(";", 1)[0] if "stored as evidence " in view else ""
    say(f"  $ {story.LOG_COMMAND}   ({len(log.encode()):,} bytes, {log.count(chr(10)):,} lines)")
    say(f"  → the model got {len(view.encode()):,} bytes instead: the error lines and the tail, then")
    say(indented(view.splitlines()[-1] if view else "(nothing: the output was not shaped)", "      ", 1))
    say(f"  → the whole output is evidence {ref}, byte for byte")

    step(3, "A failing test, the fix, and a stop too early", "PostToolUseFailure, PostToolUse and Stop hooks")
    test = {"command": story.TEST_COMMAND}
    await claude.tool("Bash", test, f"Exit code 1\n{story.FAILED_TEST}", failed=True)
    say(f"  $ {story.TEST_COMMAND}   → {story.FAILED_TEST.strip().splitlines()[-2]}")
    file = str(workspace / story.LIMITER)
    edit = {"file_path": file, "old_string": story.OLD_CODE, "new_string": story.NEW_CODE}
    await claude.tool("Edit", edit, {"filePath": file, "oldString": story.OLD_CODE, "newString": story.NEW_CODE})
    say(f"  edit {story.LIMITER}: return 429 with Retry-After instead of raising")
    blocked = await claude.hook("stop", "Stop", stop_hook_active=False)
    reason = str((blocked or {}).get("reason", ""))
    say("  the agent says it is done → Stop blocked once, the model is told:")
    say(indented(reason, "      ", 3))
    await claude.tool("Bash", test, _bash(story.PASSED_TEST))
    allowed = await claude.hook("stop", "Stop", stop_hook_active=False)
    say(f"  $ {story.TEST_COMMAND}   → {story.PASSED_TEST.strip()}; the next stop is allowed")
    return ref, [
        ref.startswith("ev_") and len(view.encode()) < len(log.encode()) // 10,
        (blocked or {}).get("decision") == "block" and "limiter.py" in reason,
        allowed is None,
    ]


async def _compaction(client: Any, claude: Session, task: str, ref: str) -> list[bool]:
    """Steps 4 to 6: the task saved; the compaction's summary checked and repaired; a save trusting it refused."""
    step(4, "The agent saves its task", "checkpoint_save over MCP")
    state = story.saved_state(ref)
    saved = _text(await client.call_tool("checkpoint_save", {"task_id": task, "state": state, "trigger": "semantic"}))
    say(indented(saved, "  → ", 2))

    step(5, "Claude Code compacts the conversation; its summary loses the rule", "SessionStart hook, after compact")
    claude.compacted(story.SUMMARY)
    say(indented(f"summary: {story.SUMMARY}", "  ", 3))
    out = await claude.hook("session-start", "SessionStart", source="compact")
    repair = str(((out or {}).get("hookSpecificOutput") or {}).get("additionalContext", ""))
    say(f"  → ctxkeep checked the summary against the session's records; the model also gets ({len(repair):,} chars):")
    say(indented("\n".join(line for line in repair.splitlines()[1:] if line.strip()), "      ", 8))

    step(6, "An agent that trusted the summary saves its state", "checkpoint_save over MCP")
    lossy = story.trusting_the_summary(state)
    refused = _text(await client.call_tool("checkpoint_save", {"task_id": task, "state": lossy, "expected_version": 1}))
    say(
        indented(refused.splitlines()[0], "  → ", 1) + "\n" + indented("\n".join(refused.splitlines()[1:]), "      ", 3)
    )
    return [
        f"saved {task} v1" in saved,
        story.RULE in repair and story.OPEN_PR in repair,
        refused.startswith("REFUSED") and "pending_unaccounted" in refused,
    ]


async def _resume(client: Any, task: str, ref: str) -> list[bool]:
    """Step 7: a resumed agent gets its state, the exact log line and its next context back; then opens the PR."""
    step(7, "A resumed agent gets the state back", "checkpoint_load, evidence_get, build_working_set over MCP")
    brief = _text(await client.call_tool("checkpoint_load", {"task_id": task}))
    say("  the resume brief checkpoint_load gives the model, in part:")
    say(indented(sections(brief, ("Constraints", "Pending", "Next action")), "      ", 6))
    line = _text(await client.call_tool("evidence_get", {"ref": ref, "mode": "grep", "pattern": "QuotaExceeded:"}))
    say(f"  the exact line from the offloaded log, evidence_get(ref, mode=grep): {story.EXCEPTION}")
    focus = "why over-quota requests got 500"
    built = await client.call_tool(
        "build_working_set", {"task_id": task, "budget_tokens": 1_500, "format": "json", "focus": focus}
    )
    blocks = ", ".join(f"{b['slot']} {b['tokens']}" for b in built.structured_content["blocks"])
    say(f"  the next step's context, rebuilt within 1,500 tokens: {blocks}")
    key = f"{task}:pull-request:open"
    intent = {"task_id": task, "idempotency_key": key, "action": "open pull request", "target": "fix/limiter-429"}
    await client.call_tool("action_intent", intent)
    result = {"idempotency_key": key, "status": "succeeded", "external_id": "PR #128"}
    recorded = _text(await client.call_tool("action_result", result))
    state = story.after_the_pull_request(story.saved_state(ref), "PR #128")
    v2 = _text(await client.call_tool("checkpoint_save", {"task_id": task, "state": state, "expected_version": 1}))
    say("  the pull request, journaled before it is opened (a resumed agent never opens it twice):")
    say(indented(recorded, "      ", 1))
    say(indented(v2, "  → ", 1))
    return [
        story.RULE in brief and story.OPEN_PR in brief,
        story.EXCEPTION in line,
        built.structured_content["tokens_total"] <= 1_500 and story.RULE[:20] in _text(built),
        recorded.startswith("recorded"),
        f"saved {task} v2" in v2,
    ]
