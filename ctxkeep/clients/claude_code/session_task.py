"""A Claude Code session's task, read from its transcript alone (the agent need not cooperate).

goal: the first prompt a person typed (a command that expands to a prompt counts; built-in
commands such as /clear do not); plan: the latest ExitPlanMode plan (the plan file it names, as
on disk, else as written in the session); pending and completed: the latest todo list (TodoWrite,
or TaskCreate/TaskUpdate of newer versions, deleted tasks removed); constraints: later prompts
that give an instruction ("don't", "never", "must", "always", "make sure", "instead", …) — other
prompts are kept as the latest requests; completed also names the files edited; open questions:
tool errors not followed by a success of the same tool; next action: the todo in progress, else
the first pending one, else the latest request. A todo that leaves the list unfinished leaves
the state through `dropped`, so every version verifies. A `mcp__<server>__checkpoint_save` call
names the agent's own task (`bound_task`); `merge_todos` carries the todo list into it. The
transcript format is Claude Code's own and changes: reading is defensive, an odd record is skipped.
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
MAX_CONSTRAINTS = 30
MAX_INSTRUCTION_CHARS = 300  # a longer prompt is a request or a report, not a standing instruction
_SAVE_TOOL = re.compile(r"^mcp__.+__checkpoint_save$")
_EDIT_TOOLS = {"Edit": "file_path", "Write": "file_path", "MultiEdit": "file_path", "NotebookEdit": "notebook_path"}
_NOT_A_PROMPT = ("[Request interrupted", "<task-notification>", "This session is being continued", "<local-command-",
                 "Caveat:", "<system-reminder>", "<bash-")
_INSTRUCTION = re.compile(
    r"^(?:no[,.!]|stop\b|don'?t\b|do not\b|never\b|always\b|avoid\b|make sure\b|instead\b)|\b(?:don'?t|do not|never|must|"
    r"mustn'?t|always|make sure|instead of|avoid)\b|不要|别再|不能|必须|禁止|务必", re.IGNORECASE)
_COMMAND = re.compile(r"<command-name>(.*?)</command-name>", re.DOTALL)
_COMMAND_ARGS = re.compile(r"<command-args>(.*?)</command-args>", re.DOTALL)
_CREATED_ID = re.compile(r"#(\d+)|\btask (?:id )?(\d+)\b", re.IGNORECASE)
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
    task_ids: dict[str, str] = field(default_factory=dict)  # Claude Code task id -> subject
    created: int = 0  # TaskCreate calls so far (ids count from 1 unless a result names another)
    pending_creates: dict[str, str] = field(default_factory=dict)  # TaskCreate tool_use id -> subject, until its result
    last_command: int | None = None  # index in prompts of a slash command, until we know it ran locally


def _clean(text: str, limit: int = MAX_ITEM_CHARS) -> str:
    """One line of plain text, cut to `limit` characters (characters a TaskState refuses are removed)."""
    flat = " ".join(without_bad_characters(text).split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _text_of(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list (anything else counts as no text)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text") or "") for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def _prompt_text(content: Any) -> str | None:
    """The text a person typed (or the command they ran), or None for tool results and machine text."""
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return None
    text = _text_of(content).strip()
    if not text or text.startswith(_NOT_A_PROMPT):
        return None
    command = _COMMAND.search(text)
    if command:
        args = _COMMAND_ARGS.search(text)
        return f"{command.group(1).strip()} {args.group(1).strip() if args else ''}".strip()
    return text


def _plan_lines(plan: str) -> list[str]:
    lines = [re.sub(r"^(?:[-*+]|\d+[.)])\s+", "", line.strip()) for line in plan.splitlines()]
    return [_clean(line) for line in lines if line and not line.startswith("#")][:30]


def _set_todo(view: SessionView, subject: str, status: str) -> None:
    todos = dict(view.todos or {})
    if status == "deleted":
        todos.pop(subject, None)
    else:
        todos[subject] = status
    view.todos = todos


def _task_tool(view: SessionView, name: str, data: dict[str, Any], use_id: str) -> None:
    if name == "TaskCreate" and (data.get("subject") or data.get("description")):
        subject = _clean(str(data.get("subject") or data.get("description")))
        view.created += 1
        view.task_ids[str(view.created)] = subject
        view.pending_creates[use_id] = subject
        _set_todo(view, subject, "pending")
    elif name == "TaskUpdate" and data.get("status"):
        subject = view.task_ids.get(str(data.get("taskId", "")).strip()) or _clean(str(data.get("subject") or ""))
        if subject in (view.todos or {}):
            _set_todo(view, subject, str(data["status"]))


def _tool_use(view: SessionView, block: dict[str, Any]) -> None:
    name, given = str(block.get("name", "")), block.get("input")
    data: dict[str, Any] = given if isinstance(given, dict) else {}
    target = data.get(_EDIT_TOOLS.get(name, ""))
    if name == "TodoWrite" and isinstance(data.get("todos"), list):
        view.todos = {_clean(str(t.get("content") or "")): str(t.get("status") or "pending")
                      for t in data["todos"] if isinstance(t, dict) and str(t.get("content") or "").strip()}
    elif name in ("TaskCreate", "TaskUpdate"):
        _task_tool(view, name, data, str(block.get("id")))
    elif name == "ExitPlanMode" and isinstance(data.get("plan"), str):
        view.plan = _plan_lines(data["plan"])
    elif isinstance(target, str) and _PLAN_FILES in target:
        if name == "Write" and isinstance(data.get("content"), str):
            view.plan_files[target] = data["content"]
    elif isinstance(target, str) and _clean(target) not in view.files_edited:
        view.files_edited.append(_clean(target))
    elif _SAVE_TOOL.match(name) and isinstance(data.get("task_id"), str) and data["task_id"].strip():
        view.bound_task = data["task_id"].strip()


def _tool_result(view: SessionView, block: dict[str, Any], names: dict[str, str]) -> None:
    use_id = str(block.get("tool_use_id"))
    tool = names.get(use_id, "tool")
    text = _text_of(block.get("content"))
    if use_id in view.pending_creates:  # "Task #3 created": the id later TaskUpdate calls use
        subject = view.pending_creates.pop(use_id)
        found = _CREATED_ID.search(text)
        if found:
            view.task_ids = {k: v for k, v in view.task_ids.items() if v != subject}
            view.task_ids[found.group(1) or found.group(2)] = subject
    view.errors.pop(tool, None)
    if block.get("is_error"):
        view.errors[tool] = _clean(next((line for line in text.splitlines() if line.strip()), "error"), 200)


def _plan_result(view: SessionView, result: Any, read_plan: PlanReader) -> None:
    """ExitPlanMode's result record: the plan itself, or the plan file (as on disk, else as written in the session)."""
    if isinstance(result, dict) and "plan" in result and ("filePath" in result or isinstance(result["plan"], str)):
        path = str(result.get("filePath"))
        text = result["plan"] if isinstance(result["plan"], str) else None
        if text is None and _PLAN_FILES in path:
            text = read_plan(path) or view.plan_files.get(path)
        if text:
            view.plan = _plan_lines(text)


def _user_record(view: SessionView, record: dict[str, Any], content: Any) -> None:
    if record.get("isMeta") or record.get("isCompactSummary"):
        return
    if _text_of(content).lstrip().startswith("<local-command-") and view.last_command is not None:
        del view.prompts[view.last_command]  # a built-in command (/clear, /model …) that ran locally: not a request
        view.last_command = None
        return
    prompt = _prompt_text(content)
    if prompt:
        view.last_command = len(view.prompts) if _COMMAND.search(_text_of(content)) else None
        view.prompts.append(prompt)


def _record(view: SessionView, record: dict[str, Any], names: dict[str, str], read_plan: PlanReader) -> None:
    view.records += 1
    if view.session_id is None and isinstance(record.get("sessionId"), str):
        view.session_id = _clean(record["sessionId"], 200)
    if record.get("type") == "system" and record.get("subtype") == "local_command" and view.last_command is not None:
        del view.prompts[view.last_command]
        view.last_command = None
    message = record.get("message")
    if not isinstance(message, dict) or record.get("type") not in ("user", "assistant"):
        return
    content = message.get("content")
    _plan_result(view, record.get("toolUseResult"), read_plan)
    if record["type"] == "user":
        _user_record(view, record, content)
    for block in content if isinstance(content, list) else []:
        if isinstance(block, dict) and block.get("type") == "tool_use":
            names[str(block.get("id"))] = str(block.get("name", "tool"))
            _tool_use(view, block)
        elif isinstance(block, dict) and block.get("type") == "tool_result":
            _tool_result(view, block, names)


def read_session(lines: Iterable[str], read_plan: PlanReader = lambda path: None) -> SessionView:
    """The session view of a transcript's lines; `read_plan` reads a plan file that ExitPlanMode names. Lines that are not
    JSON objects, sidechain records and records that do not have the expected shape are skipped."""
    view = SessionView()
    names: dict[str, str] = {}  # tool_use id -> tool name
    for line in lines:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict) or record.get("isSidechain"):
            continue
        try:
            _record(view, record, names, read_plan)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError):
            continue  # a record of a shape this reader does not know
    return view


def _accumulated(previous: list[str], new: list[str], limit: int = MAX_ITEMS) -> list[str]:
    """Earlier items first (never lost), then the new ones, without repeats, within `limit`."""
    seen = {match_key(item) for item in previous}
    fresh: list[str] = []
    for item in new:
        if match_key(item) not in seen:
            seen.add(match_key(item))
            fresh.append(item)
    return previous + fresh[:max(0, limit - len(previous))]


def _instructions(prompts: list[str]) -> list[str]:
    return [p for p in prompts if len(p) <= MAX_INSTRUCTION_CHARS and _INSTRUCTION.search(p)]


def _next_action(todos: dict[str, str], pending: list[str], later: list[str]) -> str | None:
    in_progress = next((item for item, status in todos.items() if status == "in_progress"), None)
    if in_progress or pending:
        return f"Continue: {in_progress}" if in_progress else f"Next: {pending[0]}"
    return f"Respond to the latest request: {later[-1]}" if later else None


def session_state(view: SessionView, previous: TaskState | None) -> TaskState:
    """The session task's next state: the previous one carried forward with what the transcript says now."""
    goal = previous.goal if previous else _clean(view.prompts[0], MAX_GOAL_CHARS) if view.prompts else f"Claude Code session {view.session_id}"
    later = [_clean(p) for p in view.prompts[1:]]
    constraints = _accumulated(list(previous.constraints) if previous else [], _instructions(later), MAX_CONSTRAINTS)
    todos = view.todos or {}
    pending = [item for item, status in todos.items() if status != "completed"][:MAX_ITEMS]
    done = [item for item, status in todos.items() if status == "completed"]
    completed = _accumulated(list(previous.completed) if previous else [], done + [f"Edited {path}" for path in view.files_edited])
    dropped = [Dropped(kind="pending", item=item, reason="no longer on the agent's todo list")
               for item in (previous.pending if previous else []) if item not in pending and item not in completed]
    return TaskState(
        goal=goal, constraints=constraints, plan=view.plan or (list(previous.plan) if previous else []), pending=pending,
        completed=completed, dropped=dropped[:MAX_ITEMS], next_action=_next_action(todos, pending, later),
        open_questions=[f"Error still open ({tool}): {text}" for tool, text in list(view.errors.items())[-MAX_ERRORS:]],
        extra={"source": "transcript", "session_id": view.session_id, "latest_requests": later[-5:]},
    )


def merge_todos(state: TaskState, view: SessionView) -> TaskState:
    """The agent's own task with the transcript's todo list carried in: finished todos move from pending to completed,
    new ones join pending. Nothing else of the agent's state changes."""
    todos = view.todos or {}
    done = {match_key(item) for item, status in todos.items() if status == "completed"}
    known = {match_key(item) for item in [*state.pending, *state.completed]}
    pending = [item for item in state.pending if match_key(item) not in done]
    pending += [item for item, status in todos.items() if status != "completed" and match_key(item) not in known]
    completed = state.completed + [item for item in state.pending if match_key(item) in done]
    return TaskState.model_validate({**state.model_dump(), "pending": pending[:MAX_ITEMS], "completed": completed[:MAX_ITEMS], "dropped": []})
