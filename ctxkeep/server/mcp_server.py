"""The ctxkeep MCPServer: it answers the handshake and the lists before anything heavy is imported, and turns
failures into tool errors an agent can act on (no SDK prefix, no traceback, no echoed input)."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
from anyio.abc import TaskGroup, TaskStatus
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import (
    Completion,
    Icon,
    Prompt,
    Resource,
    ResourceTemplate,
    Tool,
    ToolAnnotations,
)
from pydantic import ValidationError

from ctxkeep.errors import CtxkeepError
from ctxkeep.server.advertised import Lists, advertised
from ctxkeep.server.schema import lean_schema
from ctxkeep.server.text_arguments import keeping_text

logger = logging.getLogger("ctxkeep")

AppLifespan = Callable[[], AbstractAsyncContextManager[object]]
# registers the tools, resources and prompts on the server; returns the lifespan they run in (it opens the database)
Load = Callable[["CtxkeepServer"], AppLifespan]


def _field(loc: tuple[Any, ...]) -> str:
    return ".".join(str(part) for part in loc) or "(arguments)"


_ITEMS = {
    "done_criteria": "criterion",
    "plan": "plan step",
    "completed": "completed item",
    "pending": "pending item",
    "assumptions": "assumption",
    "open_questions": "question",
    "evidence_refs": "ref",
    "facts": "fact",
}


def _too_long(loc: tuple[Any, ...], size: int, limit: int) -> str:
    """Where a task state's text over the limit can go: evidence, with a short item that names its ref."""
    names = [part for part in loc if isinstance(part, str)]
    name = names[-1] if names else "text"
    if isinstance(loc[-1], int) and name in _ITEMS:
        name = _ITEMS[name]
    elif isinstance(loc[-1], int):
        name = name.removesuffix("s")
    return (
        f"{size:,} characters, over the {limit:,}-character limit; put the long text in evidence (evidence_put) and "
        f"keep a short {name.replace('_', ' ')} here that names the ref evidence_put returns"
    )


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
        elif err["type"] == "string_too_long" and err["loc"][:1] == ("state",) and isinstance(err.get("input"), str):
            message = _too_long(tuple(err["loc"]), len(err["input"]), int(err.get("ctx", {}).get("max_length", 0)))
        lines.append(f"- {_field(tuple(err['loc']))}: {message}")
    lines.append("Fix these fields and call again; the tool's input schema lists every field.")
    return "\n".join(lines)


WARM_UP_AFTER_S = 1.0  # the app is loaded this long after start, or as soon as the tools were listed


class _Run:
    """One run of the server (one lifespan): the task group the app's lifespan runs in once it was opened."""

    def __init__(self, group: TaskGroup) -> None:
        self.group = group
        self.stop = anyio.Event()
        self.lock = anyio.Lock()
        self.listed = anyio.Event()
        self.warming = anyio.CancelScope()
        self.opened = False


class CtxkeepServer(MCPServer[Any]):
    """MCPServer whose handshake and lists cost no import of what the tools run, whose tool errors carry ctxkeep's own
    messages verbatim, whose tools/list advertises lean input schemas (ctxkeep.server.schema) while the full ones
    validate every call, and whose text arguments stay text (ctxkeep.server.text_arguments).

    `initialize` and the four lists (tools, resources, resource templates, prompts: ctxkeep.server.advertised) are
    answered from what is already imported. The first tool call, resource read, prompt or completion runs `load`
    (the tool functions, models and storage are imported and registered) and enters the lifespan it returns (the
    database is opened) in a task of this server's own lifespan, which closes it when the server stops; calls that
    arrive meanwhile wait for the same loading."""

    def __init__(self, *args: Any, load: Load, **kwargs: Any) -> None:
        super().__init__(*args, lifespan=self._lifespan, **kwargs)
        self._load = load
        self._app_lifespan: AppLifespan | None = None
        self._run: _Run | None = None
        self._completer: Callable[..., Awaitable[Completion | None]] | None = None
        super().completion()(self._complete)  # type: ignore[no-untyped-call]  # announced from the handshake on

    def load_tools(self) -> None:
        """Import and register the tools, resources and prompts (once)."""
        if self._app_lifespan is None:
            self._app_lifespan = self._load(self)

    async def registered(self) -> Lists:
        """The four lists as the registered definitions give them (loading them): what advertised.json holds."""
        self.load_tools()
        tools = [
            tool.model_copy(update={"input_schema": lean_schema(tool.name, tool.input_schema)})
            for tool in await super().list_tools()
        ]
        return Lists(
            tools=tools,
            resources=await super().list_resources(),
            resource_templates=await super().list_resource_templates(),
            prompts=await super().list_prompts(),
        )

    @asynccontextmanager
    async def _lifespan(self, _: MCPServer[Any]) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            self._run = run = _Run(group)
            group.start_soon(self._warm_up, run)
            try:
                yield None
            finally:
                self._run = None
                run.warming.cancel()
                run.stop.set()  # the app's lifespan, when it was entered, exits in its own task (closing the store)

    async def _ready(self) -> None:
        """Loaded, and the app's lifespan entered in this run."""
        self.load_tools()
        run = self._run
        if run is None:
            raise RuntimeError("the server is not running: its lifespan has not started")
        if run.opened:
            return
        async with run.lock:
            if not run.opened:
                with anyio.CancelScope(shield=True):  # every waiting call shares it: one cancelled call must not end it
                    await run.group.start(self._serve_app, run)
                run.opened = True

    async def _warm_up(self, run: _Run) -> None:
        """Load the app and open the database off the handshake's path: once the tools were listed (the client is
        set up and waits for its model) or WARM_UP_AFTER_S after start, whichever comes first. So the hooks' offloads
        are taken in and a database that is down is reported without waiting for a call; a failure here is logged
        and the first call tries again."""
        with run.warming:
            with anyio.move_on_after(WARM_UP_AFTER_S):
                await run.listed.wait()
                await anyio.sleep(0.05)  # the list's answer goes out first
            try:
                await self._ready()
            except Exception:
                logger.exception("ctxkeep could not load its tools at start; the first call tries again")

    async def _serve_app(self, run: _Run, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        assert self._app_lifespan is not None
        async with self._app_lifespan():
            task_status.started()
            await run.stop.wait()

    def _tool_input_schema(self, name: str) -> dict[str, Any] | None:
        self.load_tools()
        return super()._tool_input_schema(name)

    def completion(self) -> Callable[[Callable[..., Awaitable[Completion | None]]], Any]:
        """Register the completion function (the SDK's handler for it is installed at construction)."""

        def decorator(func: Callable[..., Awaitable[Completion | None]]) -> Any:
            self._completer = func
            return func

        return decorator

    async def _complete(self, ref: Any, argument: Any, context: Any) -> Completion | None:
        await self._ready()
        return None if self._completer is None else await self._completer(ref, argument, context)

    async def list_tools(self) -> list[Tool]:
        if self._run is not None:
            self._run.listed.set()
        return advertised().tools

    async def list_resources(self) -> list[Resource]:
        return advertised().resources

    async def list_resource_templates(self) -> list[ResourceTemplate]:
        return advertised().resource_templates

    async def list_prompts(self) -> list[Prompt]:
        return advertised().prompts

    async def read_resource(self, uri: Any, context: Any = None) -> Iterable[ReadResourceContents] | Any:
        await self._ready()
        return await super().read_resource(uri, context)

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None, context: Any = None) -> Any:
        await self._ready()
        return await super().get_prompt(name, arguments, context)

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

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        await self._ready()
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
        from ctxkeep.server.principal import PRINCIPAL  # loaded with the tools (it needs their scope)

        if PRINCIPAL.get() is None:
            return message
        for path in sorted((p for p in self.server_paths if len(p) > 1), key=len, reverse=True):
            message = message.replace(path, "<a path on the server>")
        return message
