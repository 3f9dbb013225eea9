"""The action journal tools: an intent before a side effect, its result after."""

from __future__ import annotations

from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from pydantic import Field

from ctxkeep.models import TaskId
from ctxkeep.models.journal import (
    ActionIntentRequest,
    ActionIntentResult,
    ActionResultRequest,
    ActionResultResult,
    ActionStatus,
)
from ctxkeep.server import render
from ctxkeep.server.common import WRITE, Runtime, reply
from ctxkeep.tools import journal

Optional = Annotated[str | None, Field(max_length=4000)]


def register_journal_tools(server: MCPServer[Any], runtime: Runtime) -> None:
    @server.tool(annotations=WRITE)
    async def action_intent(
        task_id: TaskId,
        idempotency_key: Annotated[
            str, Field(max_length=200, description="One key per side effect: 'task:object:step'.")
        ],
        action: Annotated[str, Field(max_length=4000, description="What will be done, e.g. 'send refund'.")],
        target: Annotated[str, Field(max_length=4000, description="What it is done to, e.g. 'order 8812'.")],
        params_summary: Optional = None,
    ) -> Annotated[CallToolResult, ActionIntentResult]:
        """Record a side effect on an external system (payment, email, deploy, ticket) right before doing it, then action_result. Sending the same intent again tells you whether it already ran."""
        request = ActionIntentRequest(
            task_id=task_id,
            idempotency_key=idempotency_key,
            action=action,
            target=target,
            params_summary=params_summary,
        )
        result = await journal.action_intent(runtime.get(), request)
        return reply(result, result.advice)

    @server.tool(annotations=WRITE)
    async def action_result(
        idempotency_key: Annotated[str, Field(max_length=200)],
        status: ActionStatus,
        external_id: Optional = None,
        receipt_ref: Annotated[str | None, Field(max_length=4000, description="Evidence ref of the receipt.")] = None,
        detail: Optional = None,
    ) -> Annotated[CallToolResult, ActionResultResult]:
        """Record the outcome of an action_intent (once; final)."""
        request = ActionResultRequest(
            idempotency_key=idempotency_key,
            status=status,
            external_id=external_id,
            receipt_ref=receipt_ref,
            detail=detail,
        )
        result = await journal.action_result(runtime.get(), request)
        return reply(result, render.action(result))
