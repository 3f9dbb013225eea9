"""Turn failures into tool errors an agent can act on: no SDK prefix, no traceback, no echoed input."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Icon, Tool, ToolAnnotations
from pydantic import ValidationError

from ctxkeep.errors import CtxkeepError
from ctxkeep.server.principal import PRINCIPAL
from ctxkeep.server.schema import lean_schema
from ctxkeep.server.text_arguments import keeping_text


def _field(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(arguments)"


def describe_validation(tool: str, error: ValidationError) -> str:
    """One line per invalid field: where, and what is wrong (the rejected value is not echoed)."""
    lines = [f"invalid arguments for {tool}:"]
    for err in error.errors():
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            message = "unknown field; remove it (free-form data goes into state.extra)"
        elif err["type"] in ("model_type", "dict_type", "model_attributes_type"):
            message = "must be a JSON object with the fields the input schema lists"
        elif err["type"] == "missing":
            message = "required field is missing"
        lines.append(f"- {_field(tuple(err['loc']))}: {message}")
    lines.append("Fix these fields and call again; the tool's input schema lists every field.")
    return "\n".join(lines)


class CtxkeepServer(MCPServer[Any]):
    """MCPServer whose tool errors carry ctxkeep's own messages verbatim, whose tools/list advertises lean input
    schemas (ctxkeep.server.schema) while the full ones validate every call, and whose text arguments stay text
    (ctxkeep.server.text_arguments)."""

    def add_tool(
        self,
        fn: Callable[..., Any],
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
    ) -> None:
        super().add_tool(fn, name, title, description, annotations, icons, meta, structured_output)
        tool = self._tool_manager.get_tool(name or fn.__name__)
        if tool is not None:
            tool.fn_metadata = keeping_text(tool.fn_metadata)

    async def list_tools(self) -> list[Tool]:
        return [
            tool.model_copy(update={"input_schema": lean_schema(tool.name, tool.input_schema)})
            for tool in await super().list_tools()
        ]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        tool = self._tool_manager.get_tool(name)
        unknown = (
            sorted(set(arguments) - set(tool.parameters.get("properties", {})))
            if tool and isinstance(arguments, dict)
            else []
        )
        if unknown:  # the SDK would ignore them silently, and a typo would pass for a default
            raise ToolError(
                "\n".join(
                    [
                        f"invalid arguments for {name}:",
                        *(f"- {field}: unknown field; remove it" for field in unknown),
                        "Fix these fields and call again; the tool's input schema lists every field.",
                    ]
                )
            )
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, CtxkeepError):
                raise ToolError(self._shown(str(cause))) from cause
            if isinstance(cause, ValidationError):
                raise ToolError(describe_validation(name, cause)) from cause
            raise

    server_paths: tuple[str, ...] = ()  # the database, its folder, the home folder: never shown to a remote user

    def _shown(self, message: str) -> str:
        """The message as the caller may see it: for a shared server's remote user, the server's own paths hidden."""
        if PRINCIPAL.get() is None:
            return message
        for path in sorted((p for p in self.server_paths if len(p) > 1), key=len, reverse=True):
            message = message.replace(path, "<a path on the server>")
        return message
