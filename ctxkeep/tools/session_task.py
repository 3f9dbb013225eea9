"""A Claude Code session's task, read from its transcript alone (the agent need not cooperate).

goal: the first user prompt; plan: the latest ExitPlanMode plan; pending and completed: the
latest todo list (TodoWrite, or the TaskCreate/TaskUpdate tools of newer versions); constraints:
later prompts that correct or add requirements; completed also names the files edited; open
questions: tool errors not followed by a success of the same tool; next action: the todo in
progress, else the first pending one, else the latest request. A todo that leaves the list
without being completed leaves the state through `dropped`, so every version verifies. When the
agent saved a checkpoint itself (a `mcp__<server>__checkpoint_save` tool call), `bound_task`
names that task. The transcript format is Claude Code's own and changes: reading is defensive.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ctxkeep.models import Dropped, TaskState
from ctxkeep.models.common import MAX_ITEMS
from ctxkeep.text import match_key, without_bad_characters

MAX_ITEM_CHARS = 500
MAX_GOAL_CHARS = 2_000
MAX_ERRORS = 5
_SAVE_TOOL = re.compile(r"^mcp__.+__checkpoint_save$")
_EDIT_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
_NOT_A_PROMPT = ("[Request interrupted", "<task-notification>", "This session is being continued", "<local-command-",
                 "Caveat:", "<system-reminder>", "<bash-")
_REQUIREMENT = re.compile(
    r"\b(don'?t|do not|never|must|mustn'?t|should(?:n'?t)?|instead|actually|only|always|make sure|stop|wrong|without|"
    r"rather|not|no longer|prefer|keep|avoid)\b|不要|别|不能|必须|禁止|不是", re.IGNORECASE)
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_PLAN_FILES = "/.claude/plans/"  # where plan mode writes its plan (newer versions pass only the file to ExitPlanMode)


PlanReader = Callable[[str], "str | None"]


@dataclass
class SessionView:
    """What a transcript says about its session's task."""

    session_id: str | None = None
    prompts: list[str] = field(default_factory=list)
    plan: list[str] = field(default_factory=list)
    todos: dict[str, str] | None = None  # content -> pending | in_progress | completed, in list order
    files_edited: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)  # tool name -> first line of its latest unresolved error
    bound_task: str | None = None
    records: int = 0
    plan_files: dict[str, str] = field(default_factory=dict)  # plan file -> its latest written text


def _clean(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    """One line of plain text, cut to `limit` characters (characters a TaskState refuses are removed)."""
    flat = " ".join(without_bad_characters(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _prompt_text(content: Any) -> str | None:
    """The text a person typed, or None for tool results, interruptions, notifications and other machine text."""
    if isinstance(content, list):
        if any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
            return None
        content = "\n".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    if not isinstance(content, str) or not content.strip():
        return None
    text = content.strip()
    command = _COMMAND.search(text)
    if command:
        args = _COMMAND_ARGS.search(text)
        return f"{command.group(1)} {args.group(1) if args else ''}".strip()
    return None if text.startswith(_NOT_A_PROMPT) else text


def _plan_lines(plan: str) -> list[str]:
    lines = [re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", line.strip()) for line in plan.splitlines()]
    items = [_clean(line) for line in lines if line and not line.startswith("#")]
    return items[:30]


def _tool_use(view: SessionView, block: dict[str, Any], created: list[str]) -> None:
    name, given = str(block.get("name", "")), block.get("input")
    data: dict[str, Any] = given if isinstance(given, dict) else {}
    if name == "TodoWrite" and isinstance(data.get("todos"), list):
        view.todos = {_clean(str(t.get("content", ""))): str(t.get("status", "pending"))
                      for t in data["todos"] if isinstance(t, dict) and str(t.get("content", "")).strip()}
    elif name == "TaskCreate" and (data.get("subject") or data.get("description")):
        subject = _clean(str(data.get("subject") or data.get("description")))
        created.append(subject)
        view.todos = {**(view.todos or {}), subject: "pending"}
    elif name == "TaskUpdate" and data.get("status"):
        task = str(data.get("taskId", ""))
        subject = created[int(task) - 1] if task.isdigit() and 0 < int(task) <= len(created) else _clean(str(data.get("subject", "")))
        if subject in (view.todos or {}):
            view.todos = {**(view.todos or {}), subject: "completed" if data["status"] == "completed" else str(data["status"])}
    elif name == "ExitPlanMode" and isinstance(data.get("plan"), str):
        view.plan = _plan_lines(data["plan"])
    elif name == "Write" and _PLAN_FILES in str(data.get("file_path")) and isinstance(data.get("content"), str):
        view.plan_files[str(data["file_path"])] = data["content"]
    elif name in _EDIT_TOOLS and isinstance(data.get(_EDIT_TOOLS[name]), str):
        path = _clean(data[_EDIT_TOOLS[name]])
        if path not in view.files_edited:
            view.files_edited.append(path)
    elif _SAVE_TOOL.match(name) and isinstance(data.get("task_id"), str) and data["task_id"].strip():
        view.bound_task = data["task_id"].strip()


def _tool_result(view: SessionView, block: dict[str, Any], names: dict[str, str]) -> None:
    tool = names.get(str(block.get("tool_use_id")), "tool")
    if block.get("is_error"):
        content = block.get("content")
        text = content if isinstance(content, str) else " ".join(
            b.get("text", "") for b in content if isinstance(b, dict)) if isinstance(content, list) else ""
        first = next((line for line in text.splitlines() if line.strip()), "error")
        view.errors.pop(tool, None)
        view.errors[tool] = _clean(first, 200)
    else:
        view.errors.pop(tool, None)


def _plan_result(view: SessionView, result: Any, read_plan: PlanReader) -> None:
    """ExitPlanMode's result record: the plan itself, or the plan file (written in the session, or read from disk)."""
    if isinstance(result, dict) and "plan" in result and ("filePath" in result or isinstance(result["plan"], str)):
        path = str(result.get("filePath"))
        text = result["plan"] if isinstance(result["plan"], str) else view.plan_files.get(path) or (
            read_plan(path) if _PLAN_FILES in path else None)
        if text:
            view.plan = _plan_lines(text)


def read_session(lines: Iterable[str], read_plan: PlanReader = lambda path: None) -> SessionView:
    """The session view of a transcript's lines (records that are not JSON objects are skipped); `read_plan` reads a
    plan file that ExitPlanMode names but the transcript does not hold."""
    view = SessionView()
    names: dict[str, str] = {}  # tool_use id -> tool name
    created: list[str] = []  # TaskCreate subjects in order (TaskUpdate names them by number)
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("isSidechain"):
            continue
        view.records += 1
        view.session_id = view.session_id or (record.get("sessionId") if isinstance(record.get("sessionId"), str) else None)
        message = record.get("message")
        if not isinstance(message, dict) or record.get("type") not in ("user", "assistant"):
            continue
        content = message.get("content")
        _plan_result(view, record.get("toolUseResult"), read_plan)
        if record["type"] == "user" and not record.get("isMeta") and not record.get("isCompactSummary"):
            prompt = _prompt_text(content)
            if prompt:
                view.prompts.append(prompt)
        for block in content if isinstance(content, list) else []:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "tool_use":
                names[str(block.get("id"))] = str(block.get("name", "tool"))
                _tool_use(view, block, created)
            elif block.get("type") == "tool_result":
                _tool_result(view, block, names)
    return view


def _accumulated(previous: list[str], new: list[str]) -> list[str]:
    """Earlier items first (never lost), then the new ones, without repeats, within the list limit."""
    seen = {match_key(item) for item in previous}
    fresh = [item for item in new if match_key(item) not in seen and not seen.add(match_key(item))]  # type: ignore[func-returns-value]
    return (previous + fresh)[:MAX_ITEMS]


def session_state(view: SessionView, previous: TaskState | None) -> TaskState:
    """The session task's next state: the previous one carried forward with what the transcript says now."""
    goal = previous.goal if previous else _clean(view.prompts[0], MAX_GOAL_CHARS) if view.prompts else f"Claude Code session {view.session_id}"
    later = [_clean(p) for p in view.prompts[1:]]
    constraints = _accumulated(list(previous.constraints) if previous else [], [p for p in later if _REQUIREMENT.search(p)])
    todos = view.todos or {}
    pending = [item for item, status in todos.items() if status != "completed"]
    done = [item for item, status in todos.items() if status == "completed"]
    completed = _accumulated(list(previous.completed) if previous else [], done + [f"Edited {path}" for path in view.files_edited])
    dropped = [Dropped(kind="pending", item=item, reason="no longer on the agent's todo list")
               for item in (previous.pending if previous else []) if item not in pending and item not in completed]
    in_progress = next((item for item, status in todos.items() if status == "in_progress"), None)
    next_action: str | None = None
    if in_progress or pending:
        next_action = f"Continue: {in_progress}" if in_progress else f"Next: {pending[0]}"
    elif later:
        next_action = f"Respond to the latest request: {later[-1]}"
    return TaskState(
        goal=goal, constraints=constraints, plan=view.plan or (list(previous.plan) if previous else []), pending=pending[:MAX_ITEMS],
        completed=completed, dropped=dropped[:MAX_ITEMS], next_action=next_action,
        open_questions=[f"Error still open ({tool}): {text}" for tool, text in list(view.errors.items())[-MAX_ERRORS:]],
        extra={"source": "transcript", "session_id": view.session_id, "latest_requests": later[-5:]},
    )
