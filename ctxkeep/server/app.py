"""build_server(settings) -> MCPServer: the ctxkeep tools over MCP, thin by design.

Each tool validates its arguments through its schema, makes one call into `ctxkeep.tools`,
and returns a pydantic model (structuredContent) with a short text rendering.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from mcp.server.mcpserver import MCPServer

from ctxkeep import __version__
from ctxkeep.errors import CtxkeepError
from ctxkeep.server.checkpoint_tools import register_checkpoint_tools
from ctxkeep.server.common import Runtime
from ctxkeep.server.compress_tools import register_compress_tools
from ctxkeep.server.errors import CtxkeepServer
from ctxkeep.server.evidence_tools import register_evidence_tools
from ctxkeep.server.journal_tools import register_journal_tools
from ctxkeep.server.memory_tools import register_memory_tools
from ctxkeep.server.resources import register_resources
from ctxkeep.server.working_set_tools import register_working_set_tools
from ctxkeep.settings import Settings, configure_logging
from ctxkeep.storage import Store
from ctxkeep.tools.scope import Scope

INSTRUCTIONS = """\
ctxkeep keeps your task state outside your context so nothing important is lost to compaction or restarts.
- At the start of work, or after a restart or compaction: checkpoint_list, then checkpoint_load(task_id) and follow its brief.
- At every semantic boundary (a phase ends, a subagent returns, verification passes, an approval is requested), before
  a risky step (deleting, migrating, deploying, paying), and before context gets long: checkpoint_save the whole TaskState
  (goal, constraints, pending, completed, decisions, facts with exact values, approvals, next_action).
  Pass expected_version = the version you loaded. Items leave only by moving pending -> completed or into `dropped`
  with a reason; a refused save lists each violation: fix the state and save again.
- verify_checkpoint checks a summary state against the previous one without saving; checkpoint_diff shows what changed.
- Tool output over a few hundred lines, files, pages: evidence_put them and keep only the returned preview + ref in your context;
  evidence_search finds them again, evidence_get brings back exactly the lines, matches or chunk you need.
- Each step of a long task, or after a compaction or restart: build_working_set(task_id, focus) returns your context
  rebuilt from the records within a token budget (stable first, so prompt caches keep hitting); follow its compress_advice.
- Right before a side effect on an external system (payment, email, deploy, ticket): action_intent with an idempotency
  key 'task:object:step'; right after: action_result. On resume, an intent without a result means: look the key up in
  the system of record before retrying.
- memory_write only what should outlive the task, with its source: a preference the user confirmed, a fact with a
  receipt, an approved policy, a skill learned in a task (never a guess); memory_search finds them, memory_forget
  removes one everywhere.
- When the history grows long or a phase ends: compress_history(messages or transcript_path, task_id) and continue
  from the messages it returns; its summary_request tells you what your own summary must keep.
"""

logger = logging.getLogger("ctxkeep")


def build_server(settings: Settings) -> MCPServer[Any]:
    """The ctxkeep MCP server over one database file and one project (opened in the lifespan)."""
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
        runtime.scope = Scope(store=store, project=settings.project, memory_ttl_days=settings.memory_ttl_days)
        try:
            yield None
        finally:
            runtime.scope = None
            await store.close()

    configure_logging(settings.log_level)  # before the SDK's own logging set-up, which then leaves it alone
    server = CtxkeepServer(
        "ctxkeep", version=__version__, instructions=INSTRUCTIONS, lifespan=lifespan, log_level=settings.log_level  # type: ignore[arg-type]
    )
    register_checkpoint_tools(server, runtime)
    register_evidence_tools(server, runtime, settings)
    register_compress_tools(server, runtime)
    register_working_set_tools(server, runtime)
    register_memory_tools(server, runtime)
    register_journal_tools(server, runtime)
    register_resources(server, runtime.get)
    return server
