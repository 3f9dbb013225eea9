"""The checkpoint tools: save, load, list, diff, verify."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from ctxkeep.models import (
    MAX_NUMBER,
    CheckpointDiffResult,
    CheckpointListResult,
    CheckpointSaveRequest,
    CheckpointSaveResult,
    LeaseSeconds,
    OwnerId,
    TaskId,
    TaskState,
    Trigger,
    VerifyRequest,
    VerifyResult,
)
from ctxkeep.server import render
from ctxkeep.server.common import READ, WRITE, Format, Runtime, reply, text_reply
from ctxkeep.tools import checkpoint

Version = Annotated[int, Field(ge=1, le=MAX_NUMBER)]


def register_checkpoint_tools(server: MCPServer[Any], runtime: Runtime) -> None:
    @server.tool(annotations=WRITE)
    async def checkpoint_save(
        task_id: TaskId,
        state: TaskState,
        expected_version: Annotated[
            int | None,
            Field(
                ge=0,
                le=MAX_NUMBER,
                description="The version you loaded (0: a new task); another is refused as a conflict.",
            ),
        ] = None,
        trigger: Trigger = "manual",
        strict: Annotated[bool, Field(description="false: store despite violations and report them.")] = True,
        goal_change_reason: Annotated[
            str | None, Field(max_length=4000, description="Required when the goal changes.")
        ] = None,
        owner: OwnerId | None = None,
        lease_seconds: LeaseSeconds | None = None,
    ) -> Annotated[CallToolResult, CheckpointSaveResult]:
        """Save the task's whole state as its next version. It is verified against the previous version: an item that vanished (not moved to completed or dropped with a reason), a lost negation or a changed fact is refused, one line per violation. Save at each phase end, decision or approval request, and before compaction."""
        request = CheckpointSaveRequest(
            task_id=task_id,
            state=state,
            expected_version=expected_version,
            trigger=trigger,
            strict=strict,
            goal_change_reason=goal_change_reason,
            owner=owner,
            lease_seconds=lease_seconds,
        )
        result = await checkpoint.checkpoint_save(runtime.get(), request)
        return reply(result, render.save(result))

    @server.tool(annotations=WRITE)  # with owner it claims the task's lease
    async def checkpoint_load(
        task_id: TaskId,
        version: Annotated[int | None, Field(ge=1, le=MAX_NUMBER, description="Default: the latest.")] = None,
        format: Format = "text",
        owner: OwnerId | None = None,
        lease_seconds: LeaseSeconds | None = None,
    ) -> CallToolResult:
        """A task's resume brief: goal, constraints, state, open approvals and side effects, warnings (expired evidence, age). Call it first after a restart or compaction."""
        result = await checkpoint.checkpoint_load(runtime.get(), task_id, version, owner, lease_seconds)
        return text_reply(result, result.brief, format == "json")

    @server.tool(annotations=READ)
    async def checkpoint_list(
        limit: Annotated[int, Field(ge=1, le=500, description="At most this many tasks, newest first.")] = 50,
        cursor: Annotated[
            str | None, Field(max_length=2_000, description="The next_cursor of the previous page; omit for the first.")
        ] = None,
    ) -> Annotated[CallToolResult, CheckpointListResult]:
        """This project's tasks (latest version, goal, open items), to find the one to resume."""
        result = await checkpoint.checkpoint_list(runtime.get(), limit, cursor)
        return reply(result, render.task_list(result))

    @server.tool(annotations=READ)
    async def checkpoint_diff(
        task_id: TaskId, from_version: Version, to_version: Version
    ) -> Annotated[CallToolResult, CheckpointDiffResult]:
        """What changed between two versions of a task."""
        result = await checkpoint.checkpoint_diff(runtime.get(), task_id, from_version, to_version)
        return reply(result, render.diff(result))

    @server.tool(annotations=READ)
    async def verify_checkpoint(
        task_id: TaskId | None = None,
        from_version: Version | None = None,
        to_version: Version | None = None,
        before: TaskState | None = None,
        after: TaskState | None = None,
        goal_change_reason: Annotated[str | None, Field(max_length=4000)] = None,
        state: TaskState | None = None,
        summary: Annotated[str | None, Field(max_length=200_000)] = None,
    ) -> Annotated[CallToolResult, VerifyResult]:
        """Check without saving, by the rules checkpoint_save applies: two stored versions (task_id, from_version, to_version), two states (before, after), or a summary you wrote against its state (state, summary)."""
        request = VerifyRequest(
            task_id=task_id,
            from_version=from_version,
            to_version=to_version,
            before=before,
            after=after,
            goal_change_reason=goal_change_reason,
            state=state,
            summary=summary,
        )
        result = await checkpoint.verify_checkpoint(runtime.get(), request)
        return reply(result, render.verification(result))
