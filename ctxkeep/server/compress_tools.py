"""The compress_history tool."""

from __future__ import annotations

import os
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from ctxkeep.models import TaskId
from ctxkeep.models.compress import CompressRequest, CompressResult, HistoryFormat
from ctxkeep.server.common import WRITE, Runtime, reply
from ctxkeep.tools.compression import compress_history as compress


def _text(result: CompressResult) -> str:
    saved = 1 - result.span_tokens_after / result.span_tokens_before if result.span_tokens_before else 0.0
    lines = [
        f"compressed {result.format} history: {result.tokens_before:,} -> {result.tokens_after:,} tokens "
        f"(span {result.span_tokens_before:,} -> {result.span_tokens_after:,}, {saved:.0%} fewer); "
        f"{len(result.evidence_refs)} outputs offloaded as evidence"
    ]
    if result.messages_ref:
        lines.append(f"messages stored as {result.messages_ref} (over 25,000 tokens): evidence_get it in chunks")
    if result.verification is not None:
        lines.append(
            "summary accepted"
            if result.verification.ok
            else "summary refused:\n"
            + "\n".join(f"{v.rule} | {v.item} | {v.detail}" for v in result.verification.violations)
        )
    if result.semantic_boundary:
        lines.append(
            f"semantic boundary: {result.semantic_boundary.kind} at message {result.semantic_boundary.message_index}: checkpoint_save now"
        )
    return "\n".join(lines)


def register_compress_tools(server: MCPServer[Any], runtime: Runtime) -> None:
    @server.tool(annotations=WRITE)
    async def compress_history(
        messages: Annotated[
            list[dict[str, Any]] | None,
            Field(description="The history as OpenAI, Anthropic or {role, content} messages."),
        ] = None,
        transcript_path: Annotated[str | None, Field(description="Or a Claude Code transcript .jsonl.")] = None,
        transcript: Annotated[str | None, Field(description="Or that transcript's text (its JSONL lines).")] = None,
        format: HistoryFormat | None = None,
        task_id: TaskId | None = None,
        keep_recent: Annotated[int, Field(ge=0, le=10_000, description="Newest messages kept as they are.")] = 8,
        shape_window: Annotated[
            int, Field(ge=0, le=10_000, description="Messages before those whose tool outputs become preview + ref.")
        ] = 4,
        digest_tokens: Annotated[int, Field(ge=100, le=20_000)] = 1_000,
        summary: Annotated[
            str | None,
            Field(max_length=200_000, description="Your summary of the digested part, checked against the checkpoint."),
        ] = None,
    ) -> Annotated[CallToolResult, CompressResult]:
        """Shrink a long history without losing anything: old tool outputs become evidence refs, old turns a dense digest, the newest messages stay. Call when your context nears its budget or a phase ends."""
        request = CompressRequest(
            messages=messages,
            transcript_path=transcript_path,
            transcript=transcript,
            format=format,
            task_id=task_id,
            keep_recent=keep_recent,
            shape_window=shape_window,
            digest_tokens=digest_tokens,
            summary=summary,
        )
        result = await compress(runtime.get(), request, os.environ)
        return reply(result, _text(result))
