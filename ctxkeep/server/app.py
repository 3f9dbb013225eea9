"""build_server(settings) -> MCPServer: the ctxkeep tools over MCP, thin by design.

Each tool validates its arguments through its schema, makes one call into `ctxkeep.tools`,
and returns a pydantic model (structuredContent) with a short text rendering.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from ctxkeep import __version__
from ctxkeep.errors import CtxkeepError
from ctxkeep.models import (
    CheckpointDiffResult,
    CheckpointListResult,
    CheckpointLoadResult,
    CheckpointSaveRequest,
    CheckpointSaveResult,
    TaskId,
    TaskState,
    Trigger,
    VerifyRequest,
    VerifyResult,
)
from ctxkeep.server import render
from ctxkeep.server.errors import CtxkeepServer
from ctxkeep.server.resources import register_resources
from ctxkeep.settings import Settings
from ctxkeep.storage import Store
from ctxkeep.tools import checkpoint
from ctxkeep.tools.scope import Scope

INSTRUCTIONS = """\
ctxkeep keeps your task state outside your context so nothing important is lost to compaction or restarts.
- At the start of work, or after a restart or compaction: checkpoint_list, then checkpoint_load(task_id) and follow its brief.
- After each phase, decision, approval request, or before context gets long: checkpoint_save the whole TaskState
  (goal, constraints, pending, completed, decisions, facts with exact values, approvals, next_action).
  Pass expected_version = the version you loaded. Items leave only by moving pending -> completed or into `dropped`
  with a reason; a refused save lists each violation: fix the state and save again.
- verify_checkpoint checks a summary state against the previous one without saving; checkpoint_diff shows what changed.
"""

logger = logging.getLogger("ctxkeep")

READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)

Version = Annotated[int, Field(ge=1, description="A version number, 1 for the first save.")]


def _reply(model: BaseModel, text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=model.model_dump(mode="json"))


class _Runtime:
    """What the lifespan opens: the scope tools run in, or why the database could not be opened."""

    scope: Scope | None = None
    failure: CtxkeepError | None = None

    def get(self) -> Scope:
        """The scope; raises the opening failure so every call reports it (the server keeps running)."""
        if self.failure is not None:
            raise self.failure
        assert self.scope is not None, "the server lifespan has not started"
        return self.scope


def build_server(settings: Settings) -> MCPServer[Any]:
    """The ctxkeep MCP server over one database file and one project (opened in the lifespan)."""
    runtime = _Runtime()

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            store = await Store.open(settings.db_path, settings.busy_timeout_ms)
        except CtxkeepError as exc:
            logger.error("ctxkeep cannot use its database: %s", exc)
            runtime.failure = exc
            yield None
            return
        runtime.scope = Scope(store=store, project=settings.project)
        try:
            yield None
        finally:
            runtime.scope = None
            await store.close()

    server = CtxkeepServer(
        "ctxkeep", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan, log_level=settings.log_level  # type: ignore[arg-type]
    )
    _register_checkpoint_tools(server, runtime)
    register_resources(server, runtime.get)
    return server


def _register_checkpoint_tools(server: MCPServer[Any], runtime: _Runtime) -> None:
    @server.tool(annotations=WRITE)
    async def checkpoint_save(
        task_id: TaskId,
        state: TaskState,
        expected_version: Annotated[int | None, Field(ge=0, description="The version you loaded (0: the task must be new). A mismatch is refused as a conflict.")] = None,
        trigger: Annotated[Trigger, Field(description="Why you save: manual, resource (context near full), semantic (phase ended), pre_compact.")] = "manual",
        strict: Annotated[bool, Field(description="Refuse the save when verification finds violations (default). False stores it and reports them.")] = True,
        goal_change_reason: Annotated[str | None, Field(max_length=4000, description="Required when the goal changes: why.")] = None,
    ) -> Annotated[CallToolResult, CheckpointSaveResult]:
        """Save the task's whole state as its next immutable version, verified against the previous one. Call after each phase, decision or approval request, and before the context is compacted."""
        request = CheckpointSaveRequest(task_id=task_id, state=state, expected_version=expected_version,
                                        trigger=trigger, strict=strict, goal_change_reason=goal_change_reason)
        result = await checkpoint.checkpoint_save(runtime.get(), request)
        return _reply(result, render.save(result))

    @server.tool(annotations=READ)
    async def checkpoint_load(
        task_id: TaskId,
        version: Annotated[int | None, Field(ge=1, description="A version; omit for the latest.")] = None,
    ) -> Annotated[CallToolResult, CheckpointLoadResult]:
        """Load a task's checkpoint (latest by default) with a resume brief and checks (pending approvals, age). Call first after a restart or compaction."""
        result = await checkpoint.checkpoint_load(runtime.get(), task_id, version)
        return _reply(result, result.brief)

    @server.tool(annotations=READ)
    async def checkpoint_list(
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many tasks, newest first.")] = 50,
    ) -> Annotated[CallToolResult, CheckpointListResult]:
        """List this project's tasks with their latest version, goal and open items. Call to find the task to resume."""
        result = await checkpoint.checkpoint_list(runtime.get(), limit)
        return _reply(result, render.task_list(result))

    @server.tool(annotations=READ)
    async def checkpoint_diff(task_id: TaskId, from_version: Version, to_version: Version) -> Annotated[CallToolResult, CheckpointDiffResult]:
        """Show what changed between two versions of a task (items added, removed, changed)."""
        result = await checkpoint.checkpoint_diff(runtime.get(), task_id, from_version, to_version)
        return _reply(result, render.diff(result))

    @server.tool(annotations=READ)
    async def verify_checkpoint(
        task_id: TaskId | None = None,
        from_version: Version | None = None,
        to_version: Version | None = None,
        before: TaskState | None = None,
        after: TaskState | None = None,
        goal_change_reason: Annotated[str | None, Field(max_length=4000)] = None,
    ) -> Annotated[CallToolResult, VerifyResult]:
        """Check a new task state against an older one without saving: send task_id + from_version + to_version, or before + after. Returns each violated rule."""
        request = VerifyRequest(task_id=task_id, from_version=from_version, to_version=to_version,
                                before=before, after=after, goal_change_reason=goal_change_reason)
        result = await checkpoint.verify_checkpoint(runtime.get(), request)
        return _reply(result, render.verification(result))
