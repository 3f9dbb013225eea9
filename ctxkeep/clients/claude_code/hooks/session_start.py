"""`ctxkeep hook session-start`: after a compaction or resume, put the session's task back into the context.

Prints Claude Code's `hookSpecificOutput.additionalContext` with the active task's working set
(goal, constraints, open side effects, open approvals, pending, decisions, facts, memories,
history, evidence, next action) and how to fetch more, all under 9,000 characters (Claude Code
cuts hook output at 10,000). The active task is the one this session is bound to (by its own
pre-compact hook); with none, nothing is printed — never another session's task.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ctxkeep.clients.core.hook_runner import HookInput
from ctxkeep.clients.core.sessions import session_task
from ctxkeep.errors import InvalidInput
from ctxkeep.models.working_set import MIN_BUDGET, WorkingSetRequest
from ctxkeep.settings import Settings
from ctxkeep.tools.checkpoint import checkpoint_load
from ctxkeep.tools.scope import Scope, open_scope
from ctxkeep.tools.working_set import build_working_set

MAX_CHARS = 9_000
CHARS_PER_TOKEN = 4  # the hooks' token estimate counts at least one token per 4 characters


def _output(task_id: str, version: int, text: str) -> str:
    context = (f"ctxkeep restored task `{task_id}` from its checkpoint v{version}. Trust these records over what you "
               "remember; do not repeat a side effect listed as open before checking it.\n\n" + text +
               f"\nMore: checkpoint_load(task_id=\"{task_id}\") for the whole state, evidence_get(ref) for any ev_ ref "
               f"above, memory_search(query), build_working_set(task_id=\"{task_id}\", focus=...).\n")
    # ASCII only: Claude Code reads UTF-8, but a hook's stdout may be set to another encoding; escapes count in the length
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": context}})


def _too_big(task_id: str, version: int, goal: str) -> str:
    """When the control rules alone do not fit: the goal, and the instruction to load the rest (never a silent cut)."""
    return _output(task_id, version, f"# Task {task_id}\n\n## Goal\n- {goal[:1_500]}\n\nThis task's constraints, pending items "
                   "and approvals are longer than a hook may inject: call checkpoint_load before doing anything else.\n")


async def resume_context(scope: Scope, task_id: str, max_chars: int = MAX_CHARS) -> str:
    """The hook's whole output for `task_id`, at most `max_chars` characters."""
    budget = (max_chars - len(_output(task_id, 0, ""))) // CHARS_PER_TOKEN
    while budget >= MIN_BUDGET:
        try:
            built = await build_working_set(scope, WorkingSetRequest(task_id=task_id, budget_tokens=budget), record=False)
        except InvalidInput:  # the control rules need more than the budget
            break
        output = _output(task_id, built.version, built.text or "")
        if len(output) <= max_chars:
            return output
        budget -= (len(output) - max_chars) // CHARS_PER_TOKEN + 25  # JSON escapes took the difference
    loaded = await checkpoint_load(scope, task_id)
    return _too_big(task_id, loaded.version, loaded.state.goal)


async def session_start(hook: HookInput, settings: Settings, env: Mapping[str, str]) -> tuple[str, str]:
    async with open_scope(settings) as scope:
        task_id = await session_task(scope, hook.session_id)
        if task_id is None:
            return "", "no active task: nothing injected"
        output = await resume_context(scope, task_id)
        return output, f"injected task {task_id} ({len(output)} characters)"
