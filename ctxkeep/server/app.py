"""build_server(settings) -> MCPServer: the ctxkeep tools over MCP, thin by design.

Each tool validates its arguments through its schema, makes one call into `ctxkeep.tools`,
and returns a pydantic model (structuredContent) with a short text rendering.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

from ctxkeep import __version__
from ctxkeep.errors import CtxkeepError
from ctxkeep.server.checkpoint_tools import register_checkpoint_tools
from ctxkeep.server.common import Runtime
from ctxkeep.server.compress_tools import register_compress_tools
from ctxkeep.server.mcp_server import CtxkeepServer
from ctxkeep.server.evidence_tools import register_evidence_tools
from ctxkeep.server.journal_tools import register_journal_tools
from ctxkeep.server.memory_tools import register_memory_tools
from ctxkeep.server.resources import register_resources
from ctxkeep.server.working_set_tools import register_working_set_tools
from ctxkeep.settings import Settings, configure_logging
from ctxkeep.db_location import shown_location
from ctxkeep.tools.scope import open_scope

INSTRUCTIONS = """\
ctxkeep keeps your task's state outside your context, so compaction or a restart loses nothing.
- Resuming (new session, after compaction or restart): checkpoint_list, then checkpoint_load(task_id); trust its brief \
over your memory and follow it.
- checkpoint_save the whole state (goal, constraints, pending, completed, decisions, facts with exact values, \
approvals, next_action) at every semantic boundary (a phase ends, a decision, an approval request, a subagent \
returns), before a risky step (delete, migrate, deploy, pay) and before your context gets long; pass expected_version = the version you loaded. \
Items leave only by moving to completed, or to dropped with a reason; a refused save lists each violation: fix the \
state and save again.
- Right before a side effect on an external system (payment, email, deploy, ticket): action_intent with the key \
'task:object:step'; right after it: action_result. An intent without a result means: look the key up in the system \
of record before retrying.
- Long tool output, files, pages: evidence_put them and keep only the ref and preview; evidence_search finds them, \
evidence_get brings back the exact lines, matches or chunk.
- build_working_set(task_id, focus) rebuilds your context from the records within a token budget, stable first; \
use it after compaction and at each step of a long task, and follow its compress advice.
- compress_history shrinks a long history (outputs to evidence, old turns to a digest); verify_checkpoint checks a \
state or your summary without saving.
- memory_write only what outlives the task, with its source (a confirmed preference, a fact with a receipt, an \
approved policy, a learned skill), never a guess.
"""

logger = logging.getLogger("ctxkeep")


def build_server(settings: Settings) -> MCPServer[Any]:
    """The ctxkeep MCP server over one database file and one project (opened in the lifespan)."""
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

    configure_logging(settings.log_level)  # before the SDK's own logging set-up, which then leaves it alone
    server = CtxkeepServer(
        "ctxkeep",
        version=__version__,
        instructions=INSTRUCTIONS,
        lifespan=lifespan,
        log_level=settings.log_level,  # type: ignore[arg-type]
    )
    server.server_paths = (shown_location(settings.location), str(settings.db_path.parent), str(Path.home()))
    register_checkpoint_tools(server, runtime)
    register_evidence_tools(server, runtime, settings)
    register_compress_tools(server, runtime)
    register_working_set_tools(server, runtime)
    register_memory_tools(server, runtime)
    register_journal_tools(server, runtime)
    register_resources(server, runtime.get)
    return server
