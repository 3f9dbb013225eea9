"""MCP resources and prompts: read-only views over the same capabilities as the tools."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ResourceError, ResourceNotFoundError
from mcp.shared.exceptions import MCPError
from mcp.types import INVALID_PARAMS

from pydantic import ValidationError

from ctxkeep.errors import CtxkeepError, NotFound
from ctxkeep.models import CheckpointLoadResult
from ctxkeep.models.evidence import EvidenceGetRequest
from ctxkeep.prompts import compress_text, handoff_text, resume_text
from ctxkeep.server import render
from ctxkeep.tools import checkpoint
from ctxkeep.tools.evidence_get import evidence_get as read_evidence
from ctxkeep.tools.scope import Scope


async def _brief(scope: Callable[[], Scope], task_id: str) -> str:
    try:
        return (await checkpoint.checkpoint_load(scope(), task_id)).brief
    except NotFound as exc:
        raise ResourceNotFoundError(str(exc)) from exc
    except CtxkeepError as exc:
        raise ResourceError(str(exc)) from exc


def register_resources(server: MCPServer[Any], scope: Callable[[], Scope]) -> None:
    @server.resource("ctxkeep://tasks", name="tasks", mime_type="application/json",
                     description="This project's tasks with their latest version, goal and open items.")
    async def tasks() -> str:
        try:
            return (await checkpoint.checkpoint_list(scope(), limit=500)).model_dump_json()
        except CtxkeepError as exc:
            raise ResourceError(str(exc)) from exc

    @server.resource("ctxkeep://tasks/{task_id}", name="task", mime_type="text/markdown",
                     description="The resume brief of a task's latest checkpoint.")
    async def task(task_id: str) -> str:
        return await _brief(scope, task_id)

    @server.resource("ctxkeep://evidence/{ref}", name="evidence", mime_type="text/plain",
                     description="Stored evidence content (up to 6,000 tokens; evidence_get pages through the rest).")
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

    @server.prompt(name="resume", description="Resume a task from its latest checkpoint: the brief as your first message.")
    async def resume(task_id: str) -> str:
        return await _prompt(lambda: _loaded(scope(), task_id, resume_text))

    @server.prompt(name="handoff", description="Hand a task over: goal, done criteria, completed and verified, remaining, facts vs assumptions, artifacts, next action with its preconditions.")
    async def handoff(task_id: str) -> str:
        return await _prompt(lambda: _loaded(scope(), task_id, handoff_text))

    @server.prompt(name="compress", description="Instructions for the summary compress_history checks: what it must keep for this task.")
    async def compress(task_id: str) -> str:
        return await _prompt(lambda: _loaded(scope(), task_id, lambda loaded: compress_text(task_id, loaded.state)))


async def _loaded(scope: Scope, task_id: str, render_prompt: Callable[[CheckpointLoadResult], str]) -> str:
    return render_prompt(await checkpoint.checkpoint_load(scope, task_id))


async def _prompt(make: Callable[[], Awaitable[str]]) -> str:
    """A prompt's text; a domain error reaches the client as an invalid-params error with its message."""
    try:
        return await make()
    except CtxkeepError as exc:
        raise MCPError(INVALID_PARAMS, str(exc)) from exc
