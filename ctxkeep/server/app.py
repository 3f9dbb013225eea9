"""load_app(server, settings): the ctxkeep tools, resources and prompts registered on a server, thin by design.

Each tool validates its arguments through its schema, makes one call into `ctxkeep.tools`,
and returns a pydantic model (structuredContent) with a short text rendering. The server
(ctxkeep.server.build) runs this at its first call, not at start-up: it imports the models,
the storage and every capability.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from ctxkeep.errors import CtxkeepError
from ctxkeep.server.checkpoint_tools import register_checkpoint_tools
from ctxkeep.server.common import Runtime
from ctxkeep.server.compress_tools import register_compress_tools
from ctxkeep.server.mcp_server import AppLifespan, CtxkeepServer
from ctxkeep.server.evidence_tools import register_evidence_tools
from ctxkeep.server.journal_tools import register_journal_tools
from ctxkeep.server.memory_tools import register_memory_tools
from ctxkeep.server.resources import register_resources
from ctxkeep.server.working_set_tools import register_working_set_tools
from ctxkeep.db_location import shown_location
from ctxkeep.settings import Settings
from ctxkeep.tools.scope import open_scope


logger = logging.getLogger("ctxkeep")


def load_app(server: CtxkeepServer, settings: Settings) -> AppLifespan:
    """Register every tool, resource and prompt on `server`; returns the lifespan they run in, which opens the
    database file (or PostgreSQL) and the project of `settings` and closes them at its end."""
    runtime = Runtime()

    def spool_failed(exc: CtxkeepError) -> None:
        logger.warning("ctxkeep cannot open the hooks' spool (their offloads wait there): %s", exc)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            try:  # with PostgreSQL, the scope has the hooks' spool too: their local offloads, taken in on demand
                runtime.scope = await stack.enter_async_context(open_scope(settings, spool_failed))
            except CtxkeepError as exc:
                logger.error("ctxkeep cannot use its database: %s", exc)
                runtime.failure = exc
                yield None
                return
            if runtime.scope.store.created:
                logger.warning("ctxkeep created a new database at %s", runtime.scope.store.location)
            try:
                yield None
            finally:
                runtime.scope = None

    server.server_paths = (shown_location(settings.location), str(settings.db_path.parent), str(Path.home()))
    register_checkpoint_tools(server, runtime)
    register_evidence_tools(server, runtime, settings)
    register_compress_tools(server, runtime)
    register_working_set_tools(server, runtime)
    register_memory_tools(server, runtime)
    register_journal_tools(server, runtime)
    register_resources(server, runtime.get)
    return lambda: lifespan(server)
