"""MCP resources and prompts: read-only views over the same capabilities as the tools."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS, Completion, CompletionArgument, PromptReference, ResourceTemplateReference
from pydantic import ValidationError

from ctxkeep.errors import CtxkeepError, NotFound
from ctxkeep.models import CheckpointLoadResult
from ctxkeep.models.evidence import EvidenceGetRequest
from ctxkeep.prompts import compress_text, handoff_text, resume_text
from ctxkeep.server import render
from ctxkeep.tools import checkpoint
from ctxkeep.tools.checkpoint import active_task, task_ids
from ctxkeep.tools.checkpoint import handoff as handoff_package
from ctxkeep.tools.evidence import evidence_get as read_evidence
from ctxkeep.tools.scope import Scope


async def _brief(scope: Callable[[], Scope], task_id: str) -> str:
    try:
        return (await checkpoint.checkpoint_load(scope(), task_id)).brief
    except NotFound as exc:
        raise ResourceNotFoundError(str(exc)) from exc
    except CtxkeepError as exc:
        raise ResourceError(str(exc)) from exc


def register_resources(server: MCPServer[Any], scope: Callable[[], Scope]) -> None:
    @server.resource(
        "ctxkeep://tasks",
        name="tasks",
        mime_type="application/json",
        description="This project's tasks with their latest version, goal and open items, newest first, "
        f"{TASKS_PAGE} a page; next_cursor names the next page: ctxkeep://tasks?cursor=<next_cursor>.",
    )
    async def tasks() -> str:
        return await _tasks_page(scope, None)

    @server.resource(
        "ctxkeep://tasks{?cursor}",
        name="tasks-page",
        mime_type="application/json",
        description="A later page of ctxkeep://tasks: cursor is the next_cursor of the page before.",
    )
    async def tasks_page(cursor: str = "") -> str:
        return await _tasks_page(scope, cursor or None)

    @server.resource(
        "ctxkeep://tasks/{task_id}",
        name="task",
        mime_type="text/markdown",
        description="The resume brief of a task's latest checkpoint.",
    )
    async def task(task_id: str) -> str:
        return await _brief(scope, task_id)

    @server.resource(
        "ctxkeep://evidence/{ref}",
        name="evidence",
        mime_type="text/plain",
        description="Stored evidence content (up to 6,000 tokens; evidence_get pages through the rest).",
    )
    async def evidence(ref: str) -> str:
        try:
            result = await read_evidence(scope(), EvidenceGetRequest(ref=ref))
        except NotFound as exc:
            raise ResourceNotFoundError(str(exc)) from exc
        except ValidationError as exc:
            raise ResourceError(f"{ref!r} is not an evidence ref; refs look like ev_ followed by hex digits") from exc
        except CtxkeepError as exc:
            raise ResourceError(f"cannot read {ref!r}: {exc}") from exc
        return render.content(result)

    @server.prompt(
        name="resume",
        description="Resume a task (default: the active one) from its latest checkpoint: the brief as your first message.",
    )
    async def resume(task_id: str | None = None) -> str:
        return await _prompt(lambda: _for_task(scope(), task_id, resume_text))

    @server.prompt(
        name="handoff",
        description="Hand a task over: goal, done criteria, completed and verified, remaining, facts vs assumptions, artifacts and external ids, open side effects, next action with its preconditions.",
    )
    async def handoff(task_id: str) -> str:
        return await _prompt(lambda: _handoff(scope(), task_id))

    @server.prompt(
        name="compress",
        description="Instructions for the summary compress_history checks: what it must keep for this task (default: the active one).",
    )
    async def compress(task_id: str | None = None) -> str:
        return await _prompt(
            lambda: _for_task(scope(), task_id, lambda loaded: compress_text(loaded.task_id, loaded.state))
        )

    @server.completion()  # type: ignore[untyped-decorator, no-untyped-call]  # the SDK leaves it untyped
    async def complete(
        ref: PromptReference | ResourceTemplateReference, argument: CompletionArgument, context: Any
    ) -> Completion | None:
        """Task ids for the prompts' and the task resource's `task_id`."""
        if argument.name != "task_id":
            return None
        if isinstance(ref, ResourceTemplateReference) and ref.uri != "ctxkeep://tasks/{task_id}":
            return None
        found, total = await task_ids(scope(), argument.value)
        return Completion(values=found, total=total, has_more=total > len(found))


TASKS_PAGE = 500


async def _tasks_page(scope: Callable[[], Scope], cursor: str | None) -> str:
    try:
        return (await checkpoint.checkpoint_list(scope(), limit=TASKS_PAGE, cursor=cursor)).model_dump_json()
    except CtxkeepError as exc:
        raise ResourceError(str(exc)) from exc


async def _for_task(scope: Scope, task_id: str | None, render_prompt: Callable[[CheckpointLoadResult], str]) -> str:
    return render_prompt(await checkpoint.checkpoint_load(scope, task_id or await active_task(scope)))


async def _handoff(scope: Scope, task_id: str) -> str:
    return handoff_text(await handoff_package(scope, task_id))


async def _prompt(make: Callable[[], Awaitable[str]]) -> str:
    """A prompt's text; a domain error reaches the client as an invalid-params error with its message."""
    try:
        return await make()
    except CtxkeepError as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from exc
