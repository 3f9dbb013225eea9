"""What every tool module of the adapter shares: the runtime scope, annotations, the reply shape."""

from __future__ import annotations

from typing import Annotated, Literal

from mcp.types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from ctxkeep.server.offloads import OffloadDrain
from ctxkeep.server.principal import scoped
from ctxkeep.tools.scope import Scope

READ = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
DELETE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False)


# Tools whose job is to put text before the model (brief, evidence, search hits, working set) answer with that text
# only, by default: Claude Code and Codex CLI show a model a result's structuredContent instead of its text whenever
# it is present, and Gemini CLI shows only the text. `format: "json"` adds the structured result for programs. These
# tools declare no outputSchema, since the MCP spec requires structuredContent from a tool that declares one.
TextFormat = Literal["text", "json"]
FORMAT = Field(description="text: readable, for you (default); json: also the structured result, for programs.")
Format = Annotated[TextFormat, FORMAT]


def reply(model: BaseModel, text: str) -> CallToolResult:
    """A tool result: the model as structuredContent, `text` as the short rendering an agent reads."""
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=model.model_dump(mode="json")
    )


def text_reply(model: BaseModel, text: str, structured: bool) -> CallToolResult:
    """A text tool's result: `text` alone, or with the model as structuredContent when `structured`."""
    return reply(model, text) if structured else CallToolResult(content=[TextContent(type="text", text=text)])


class Runtime:
    """What the lifespan opens: the scope tools run in (its store opens on demand, so the server serves while its
    database is down and recovers when it is back), and the background drain of the hooks' offloads."""

    scope: Scope | None = None
    offloads: OffloadDrain | None = None

    def get(self) -> Scope:
        """The scope (a shared server's: the request's project and user); every call nudges the offload drain."""
        assert self.scope is not None, "the server lifespan has not started"
        scope = scoped(self.scope)
        if self.offloads is not None:
            self.offloads.nudge(scope)
        return scope
