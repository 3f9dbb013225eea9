"""The build_working_set tool."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from ctxkeep.models import TaskId
from ctxkeep.models.working_set import (
    DEFAULT_BUDGET,
    MAX_MCP_BUDGET,
    MIN_BUDGET,
    Slot,
    WorkingSetFormat,
    WorkingSetRequest,
    WorkingSetResult,
)
from ctxkeep.server.common import Runtime, reply
from ctxkeep.tools.working_set import build_working_set as build

# it records the selection (for the next diff and a stable cache prefix), so it is not read-only
ASSEMBLE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


def _text(result: WorkingSetResult) -> str:
    """Markdown: the working set itself; messages: a one-line account (the messages are in structuredContent)."""
    if result.text is not None:
        return result.text
    slots = ", ".join(f"{b.slot} {b.tokens}" for b in result.blocks)
    return (f"working set of {result.task_id} v{result.version}: {len(result.messages or [])} {result.format} messages, "
            f"{result.tokens_total} of {result.budget_tokens} tokens ({slots}); the messages are in structuredContent")


def register_working_set_tools(server: MCPServer[Any], runtime: Runtime) -> None:
    @server.tool(annotations=ASSEMBLE)
    async def build_working_set(
        task_id: TaskId,
        focus: Annotated[str | None, Field(max_length=4_000, description="The question or next step to rank evidence for; default the checkpoint's next_action.")] = None,
        budget_tokens: Annotated[int, Field(ge=MIN_BUDGET, le=MAX_MCP_BUDGET, description="Most tokens the result may take (cl100k_base).")] = DEFAULT_BUDGET,
        slot_budgets: Annotated[dict[Slot, int] | None, Field(description="Hard token caps per slot, e.g. {\"evidence\": 2000}; other slots share the rest.")] = None,
        recent_messages: Annotated[list[dict[str, Any]] | None, Field(description="Your messages since the last compression, append-only, as sent.")] = None,
        policy: Annotated[str | None, Field(description="Pinned rules to put first (never cut).")] = None,
        as_of: Annotated[datetime | None, Field(description="Use the evidence valid at this time (RFC 3339); default now.")] = None,
        format: Annotated[WorkingSetFormat, Field(description="markdown (text), or anthropic / openai messages.")] = "markdown",
    ) -> Annotated[CallToolResult, WorkingSetResult]:
        """Rebuild your context for the next step from the task's records: goal and constraints, state, history digest, the evidence that answers `focus`, your recent messages and the next action, within budget_tokens and stable first for prompt caching. Call it after a compaction or restart, or at each step of a long task."""
        request = WorkingSetRequest(task_id=task_id, focus=focus, budget_tokens=budget_tokens, slot_budgets=slot_budgets or {},
                                    recent_messages=recent_messages, policy=policy, as_of=as_of, format=format)
        result = await build(runtime.get(), request)
        return reply(result, _text(result))
