"""The long-term memory tools: write, search, forget."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from ctxkeep.models import MAX_NUMBER, TaskId
from ctxkeep.models.memory import (
    MemoryForgetRequest,
    MemoryForgetResult,
    MemoryKind,
    MemorySearchRequest,
    MemorySearchResult,
    MemoryWriteRequest,
    MemoryWriteResult,
    StoredKind,
)
from ctxkeep.server import render
from ctxkeep.server.common import DELETE, READ, WRITE, Runtime, reply
from ctxkeep.tools import memory

Optional = Annotated[str | None, Field(max_length=4000)]


def register_memory_tools(server: MCPServer[Any], runtime: Runtime) -> None:
    @server.tool(annotations=WRITE)
    async def memory_write(
        kind: Annotated[MemoryKind, Field(description="speculation is refused.")],
        key: Annotated[
            str,
            Field(max_length=200, description="What it is about, e.g. 'report-format'; one current memory per key."),
        ],
        content: Annotated[str, Field(max_length=4000, description="One statement.")],
        confidence: Annotated[float, Field(ge=0, le=1, description="Below 0.5 is refused.")] = 1.0,
        explicit_confirmation: Annotated[
            bool, Field(description="user_preference: the user said or confirmed it.")
        ] = False,
        source_message_id: Annotated[
            str | None, Field(max_length=4000, description="user_preference: the user's message id.")
        ] = None,
        evidence_ref: Annotated[
            str | None, Field(max_length=4000, description="task_fact: the receipt's evidence ref.")
        ] = None,
        task_id: Annotated[
            TaskId | None, Field(description="skill: the task it came from; task_fact: with source_version.")
        ] = None,
        source_version: Annotated[
            int | None, Field(ge=1, le=MAX_NUMBER, description="task_fact: the checkpoint version recording it.")
        ] = None,
        review_status: Annotated[
            Literal["draft", "in_review", "approved", "rejected"] | None,
            Field(description="project_policy: must be approved."),
        ] = None,
        effective_at: Annotated[datetime | None, Field(description="project_policy: when it applies.")] = None,
        owner: Annotated[str | None, Field(max_length=4000, description="project_policy: who owns it.")] = None,
        expires_at: Annotated[
            datetime | None, Field(description="Default by kind: preference 180 days, fact 7, skill 90, policy never.")
        ] = None,
    ) -> Annotated[CallToolResult, MemoryWriteResult]:
        """Remember beyond this task, with provenance: a preference the user confirmed, a fact with a receipt, an approved policy, a skill learned in a task. Guesses are refused; a contradiction of the key's current memory is kept and reported."""
        request = MemoryWriteRequest(
            kind=kind,
            key=key,
            content=content,
            confidence=confidence,
            explicit_confirmation=explicit_confirmation,
            source_message_id=source_message_id,
            evidence_ref=evidence_ref,
            task_id=task_id,
            source_version=source_version,
            review_status=review_status,
            effective_at=effective_at,
            owner=owner,
            expires_at=expires_at,
        )
        result = await memory.memory_write(runtime.get(), request)
        return reply(result, render.memory_written(result))

    @server.tool(annotations=READ)
    async def memory_search(
        query: Annotated[str | None, Field(max_length=4000, description="Omit to list the newest.")] = None,
        kind: StoredKind | None = None,
        key: Annotated[str | None, Field(max_length=200)] = None,
        include_history: Annotated[bool, Field(description="Also superseded, expired and scheduled versions.")] = False,
        as_of: Annotated[datetime | None, Field(description="Judge expiry at this time.")] = None,
        limit: Annotated[int, Field(ge=1, le=200)] = 20,
    ) -> Annotated[CallToolResult, MemorySearchResult]:
        """Find long-term memories (current ones unless include_history), each with its source and age."""
        request = MemorySearchRequest(
            query=query, kind=kind, key=key, include_history=include_history, as_of=as_of, limit=limit
        )
        result = await memory.memory_search(runtime.get(), request)
        return reply(result, render.memories(result))

    @server.tool(annotations=DELETE)
    async def memory_forget(
        memory_id: Annotated[str | None, Field(max_length=4000, description="One version.")] = None,
        key: Annotated[str | None, Field(max_length=200, description="Or every version of a key.")] = None,
        reason: Annotated[
            str | None, Field(max_length=4000, description="Kept in the tombstone; not the content.")
        ] = None,
    ) -> Annotated[CallToolResult, MemoryForgetResult]:
        """Delete a memory everywhere (index entries, cached working sets, digest quotes), leaving a tombstone without its content."""
        result = await memory.memory_forget(
            runtime.get(), MemoryForgetRequest(memory_id=memory_id, key=key, reason=reason)
        )
        return reply(result, render.forgotten(result))
