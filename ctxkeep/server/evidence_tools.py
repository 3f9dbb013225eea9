"""The evidence tools: put, get, search, delete."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from ctxkeep.errors import InvalidInput
from ctxkeep.models import MAX_NUMBER, TaskId
from ctxkeep.models.evidence import (
    DEFAULT_READ_TOKENS,
    MAX_READ_TOKENS,
    EvidenceDeleteResult,
    EvidenceGetRequest,
    EvidenceItem,
    EvidenceKind,
    EvidencePutResult,
    EvidenceSearchRequest,
    GetMode,
    Ref,
)
from ctxkeep.server import render
from ctxkeep.server.common import DELETE, READ, WRITE, Format, Runtime, reply, text_reply
from ctxkeep.settings import Settings
from ctxkeep.tools import evidence as store_tools
from ctxkeep.tools.evidence import evidence_get as read_evidence
from ctxkeep.tools.evidence import evidence_search as search_evidence

Tags = Annotated[list[str], Field(max_length=20, description="Single words.")]


def _put_result(batch: bool, result: Any) -> EvidencePutResult:
    if batch:
        return EvidencePutResult(refs=result.refs, items=result.items)
    return EvidencePutResult(**result.items[0].model_dump())


def register_evidence_tools(server: MCPServer[Any], runtime: Runtime, settings: Settings) -> None:
    @server.tool(annotations=WRITE)
    async def evidence_put(
        content: Annotated[str | None, Field(description="The raw text (tool output, file, page).")] = None,
        kind: EvidenceKind = "tool_result",
        source: Annotated[str | None, Field(description="Where it came from: tool, path or URL.")] = None,
        title: str | None = None,
        task_id: TaskId | None = None,
        tags: Tags | None = None,
        effective_at: Annotated[datetime | None, Field(description="From when it is valid.")] = None,
        expires_at: datetime | None = None,
        redact: Annotated[bool, Field(description="Replace secrets with markers first.")] = True,
        items: Annotated[
            list[EvidenceItem] | None, Field(description="A batch instead of content: objects with the fields above.")
        ] = None,
    ) -> Annotated[CallToolResult, EvidencePutResult]:
        """Store raw content (tool output, file, page, mail) out of your context; keep the returned ref and preview instead. One item in `content`, or a batch in `items`."""
        if (content is None) == (items is None):
            raise InvalidInput("send either content (one item) or items (a batch), not both and not neither")
        batch = (
            items
            if items is not None
            else [
                EvidenceItem(
                    content=content or "",
                    kind=kind,
                    source=source,
                    title=title,
                    task_id=task_id,
                    tags=tags or [],
                    effective_at=effective_at,
                    expires_at=expires_at,
                    redact=redact,
                )
            ]
        )
        result = await store_tools.evidence_put(runtime.get(), batch, settings.max_evidence_bytes)
        return reply(_put_result(items is not None, result), render.stored(result))

    @server.tool(annotations=READ)
    async def evidence_get(
        ref: Ref,
        mode: GetMode = "full",
        n: Annotated[int, Field(ge=1, le=100_000, description="head/tail: lines.")] = 50,
        start: Annotated[
            int | None, Field(ge=1, le=MAX_NUMBER, description="lines, grep: first line (1-based).")
        ] = None,
        end: Annotated[int | None, Field(ge=1, le=MAX_NUMBER, description="lines, grep: last line.")] = None,
        pattern: Annotated[str | None, Field(max_length=500, description="grep: a regular expression.")] = None,
        context: Annotated[int, Field(ge=0, le=50, description="grep: lines around each match.")] = 2,
        chunk: Annotated[int | None, Field(ge=0, le=MAX_NUMBER, description="chunk: which one (0-based).")] = None,
        max_tokens: Annotated[int, Field(ge=100, le=MAX_READ_TOKENS)] = DEFAULT_READ_TOKENS,
        format: Format = "text",
    ) -> CallToolResult:
        """Read stored evidence back exactly: whole, head/tail lines, a line range, grep matches with context, or a chunk. A cut result ends with the call that gets the rest."""
        request = EvidenceGetRequest(
            ref=ref,
            mode=mode,
            n=n,
            start=start,
            end=end,
            pattern=pattern,
            context=context,
            chunk=chunk,
            max_tokens=max_tokens,
        )
        result = await read_evidence(runtime.get(), request)
        return text_reply(result, render.content(result), format == "json")

    @server.tool(annotations=READ)
    async def evidence_search(
        query: Annotated[str, Field(min_length=1, max_length=2_000, description="Words to look for.")],
        task_id: TaskId | None = None,
        kind: EvidenceKind | None = None,
        tags: Tags | None = None,
        as_of: Annotated[datetime | None, Field(description="Only items valid at this time.")] = None,
        include_expired: bool = False,
        limit: Annotated[int, Field(ge=1, le=50)] = 10,
        max_tokens: Annotated[int, Field(ge=100, le=MAX_READ_TOKENS)] = DEFAULT_READ_TOKENS,
        format: Format = "text",
    ) -> CallToolResult:
        """Find stored evidence by words: refs with snippets, best first (score relative to the best hit). Then evidence_get a ref."""
        request = EvidenceSearchRequest(
            query=query,
            task_id=task_id,
            kind=kind,
            tags=tags or [],
            as_of=as_of,
            include_expired=include_expired,
            limit=limit,
            max_tokens=max_tokens,
        )
        result = await search_evidence(runtime.get(), request)
        return text_reply(result, render.hits(result), format == "json")

    @server.tool(annotations=DELETE)
    async def evidence_delete(ref: Ref) -> Annotated[CallToolResult, EvidenceDeleteResult]:
        """Delete stored evidence, e.g. a secret stored by mistake (its content goes when no other record shares it)."""
        result = await store_tools.evidence_delete(runtime.get(), ref)
        return reply(
            result,
            f"deleted {result.ref}"
            + ("; its content is erased" if result.blob_removed else "; its content stays for another record"),
        )
