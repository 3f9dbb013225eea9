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

import anyio
from mcp.server.mcpserver import MCPServer

from ctxkeep.errors import CtxkeepError
from ctxkeep.server.checkpoint_tools import register_checkpoint_tools
from ctxkeep.server.common import Runtime
from ctxkeep.server.compress_tools import register_compress_tools
from ctxkeep.server.mcp_server import AppLifespan, CtxkeepServer
from ctxkeep.server.offloads import OffloadDrain
from ctxkeep.server.evidence_tools import register_evidence_tools
from ctxkeep.server.journal_tools import register_journal_tools
from ctxkeep.server.memory_tools import register_memory_tools
from ctxkeep.server.resources import register_resources
from ctxkeep.server.working_set_tools import register_working_set_tools
from ctxkeep.db_location import shown_location
from ctxkeep.settings import Settings
from ctxkeep.storage.on_demand import OnDemandStore
from ctxkeep.tools.scope import Scope, open_spool


logger = logging.getLogger("ctxkeep")


def load_app(server: CtxkeepServer, settings: Settings) -> AppLifespan:
    """Register every tool, resource and prompt on `server`; returns the lifespan they run in, which opens the
    database file (or PostgreSQL) and the project of `settings` and closes them at its end."""
    runtime = Runtime()

    def spool_failed(exc: CtxkeepError) -> None:
        logger.warning("ctxkeep cannot open the hooks' spool (their offloads wait there): %s", exc)

    @asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        store = OnDemandStore(settings.location, settings.busy_timeout_ms, settings.db_timeout_ms)
        try:
            if (await store.opened()).created:  # migrated now; a database that is down is opened on a later call
                logger.warning("ctxkeep created a new database at %s", store.location)
        except CtxkeepError as exc:
            logger.error("ctxkeep cannot use its database yet (it tries again on the next call): %s", exc)
        try:
            spool = await open_spool(settings)  # with PostgreSQL: the hooks' local offloads, taken in on demand
        except CtxkeepError as exc:
            spool_failed(exc)
            spool = None
        runtime.scope = Scope(
            store=store,
            project=settings.project,
            memory_ttl_days=settings.memory_ttl_days,
            client_session=settings.client_session,
            spool=spool,
        )
        runtime.offloads = OffloadDrain()
        try:
            async with anyio.create_task_group() as group:
                group.start_soon(runtime.offloads.run)
                runtime.offloads.nudge(runtime.scope)  # what the hooks offloaded while no server ran
                try:
                    yield None
                finally:
                    group.cancel_scope.cancel()
        finally:
            runtime.scope = runtime.offloads = None
            with anyio.CancelScope(shield=True):  # Ctrl-C cancels the run: the database is closed all the same
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
