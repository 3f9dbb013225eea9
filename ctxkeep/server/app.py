"""load_app(server, settings): the ctxkeep tools, resources and prompts registered on a server, thin by design.

Each tool validates its arguments through its schema, makes one call into `ctxkeep.tools`,
and returns a pydantic model (structuredContent) with a short text rendering. The server
(ctxkeep.server.build) runs this at its first call, not at start-up: it imports the models,
the storage and every capability.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
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
from ctxkeep.settings import Settings
from ctxkeep.storage import Store
from ctxkeep.db_location import shown_location
from ctxkeep.tools.scope import Scope, open_spool


logger = logging.getLogger("ctxkeep")


def load_app(server: CtxkeepServer, settings: Settings) -> AppLifespan:
    """Register every tool, resource and prompt on `server`; returns the lifespan they run in, which opens the
    database file (or PostgreSQL) and the project of `settings` and closes them at its end."""
    runtime = Runtime()

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        try:
            store = await Store.open(settings.location, settings.busy_timeout_ms)
        except CtxkeepError as exc:
            logger.error("ctxkeep cannot use its database: %s", exc)
            runtime.failure = exc
            yield None
            return
        if store.created:
            logger.warning("ctxkeep created a new database at %s", store.location)
        try:
            spool = await open_spool(settings)  # with PostgreSQL: the hooks' local offloads, taken in on demand
        except CtxkeepError as exc:
            logger.warning("ctxkeep cannot open the hooks' spool (their offloads wait there): %s", exc)
            spool = None
        runtime.scope = Scope(
            store=store,
            project=settings.project,
            memory_ttl_days=settings.memory_ttl_days,
            client_session=settings.client_session,
            spool=spool,
        )
        try:
            yield None
        finally:
            runtime.scope = None
            await store.close()
            if spool is not None:
                await spool.close()

    server.server_paths = (shown_location(settings.location), str(settings.db_path.parent), str(Path.home()))
    register_checkpoint_tools(server, runtime)
    register_evidence_tools(server, runtime, settings)
    register_compress_tools(server, runtime)
    register_working_set_tools(server, runtime)
    register_memory_tools(server, runtime)
    register_journal_tools(server, runtime)
    register_resources(server, runtime.get)
    return lambda: lifespan(server)
