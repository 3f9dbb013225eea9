"""The build_working_set tool."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from ctxkeep.models import TaskId
from ctxkeep.models.working_set import (
    DEFAULT_BUDGET,
    MAX_MCP_BUDGET,
    MIN_BUDGET,
    Slot,
    WorkingSetRequest,
    WorkingSetResult,
)
from ctxkeep.server.common import Runtime, text_reply
from ctxkeep.tokens import count_tokens
from ctxkeep.tools.working_set import build_working_set as build

# it records the selection (for the next diff and a stable cache prefix), so it is not read-only
ASSEMBLE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)


ServerFormat = Literal["markdown", "json", "anthropic", "openai"]


ENVELOPE = 0.03  # what the text may add to budget_tokens: the compress advice line, when it fits


def _text(result: WorkingSetResult) -> str:
    """Markdown: the working set itself, then the compress advice when there is any and it fits 3% of the budget;
    messages: a one-line account (the messages are in structuredContent)."""
    if result.text is not None:
        advice = result.compress_advice
        line = f"\n[ctxkeep compress advice: {advice.reason}]\n" if advice.resource or advice.semantic else ""
        return result.text + line if line and count_tokens(line) <= ENVELOPE * result.budget_tokens else result.text
    slots = ", ".join(f"{b.slot} {b.tokens}" for b in result.blocks)
    return (
        f"working set of {result.task_id} v{result.version}: {len(result.messages or [])} {result.format} messages, "
        f"{result.tokens_total} of {result.budget_tokens} tokens ({slots}); the messages are in structuredContent"
    )


def register_working_set_tools(server: MCPServer[Any], runtime: Runtime) -> None:
    @server.tool(annotations=ASSEMBLE)
    async def build_working_set(
        task_id: TaskId,
        focus: Annotated[
            str | None,
            Field(max_length=4_000, description="The question or step to rank evidence for; default the next action."),
        ] = None,
        budget_tokens: Annotated[int, Field(ge=MIN_BUDGET, le=MAX_MCP_BUDGET)] = DEFAULT_BUDGET,
        slot_budgets: Annotated[
            dict[Slot, int] | None, Field(description='Token caps per slot, e.g. {"evidence": 2000}.')
        ] = None,
        recent_messages: Annotated[
            list[dict[str, Any]] | None, Field(description="Your messages since the last compression, as sent.")
        ] = None,
        policy: Annotated[str | None, Field(description="Rules to pin first.")] = None,
        as_of: datetime | None = None,
        format: Annotated[
            ServerFormat,
            Field(
                description="markdown: the text (default); json: it with how it was built; anthropic/openai: messages."
            ),
        ] = "markdown",
    ) -> CallToolResult:
        """Your context for the next step, rebuilt from the task's records within budget_tokens: rules, goal, state, memories, history digest, the evidence that answers `focus`, recent messages, next action; stable parts first for prompt caching. Call after a compaction or restart, or at each step of a long task."""
        request = WorkingSetRequest(
            task_id=task_id,
            focus=focus,
            budget_tokens=budget_tokens,
            slot_budgets=slot_budgets or {},
            recent_messages=recent_messages,
            policy=policy,
            as_of=as_of,
            format="markdown" if format == "json" else format,
        )
        result = await build(runtime.get(), request)
        return text_reply(result, _text(result), format != "markdown")
