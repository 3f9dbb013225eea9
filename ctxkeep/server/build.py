"""build_server(settings) -> CtxkeepServer: the ctxkeep MCP server, ready to answer `initialize` at once.

What it imports is what the handshake needs: the SDK, the settings, the instructions and the advertised lists. The
tools, resources and prompts are registered by ctxkeep.server.app at the first call (ctxkeep.server.mcp_server).
"""

from __future__ import annotations

from importlib import import_module

from ctxkeep import __version__
from ctxkeep.server.instructions import INSTRUCTIONS
from ctxkeep.server.mcp_server import AppLifespan, CtxkeepServer
from ctxkeep.settings import Settings, configure_logging


def build_server(settings: Settings) -> CtxkeepServer:
    """The ctxkeep MCP server over one database (opened at the first call) and one project."""

    def load(server: CtxkeepServer) -> AppLifespan:
        app = import_module("ctxkeep.server.app")
        lifespan: AppLifespan = app.load_app(server, settings)
        return lifespan

    configure_logging(settings.log_level)  # before the SDK's own logging set-up, which then leaves it alone
    return CtxkeepServer(
        "ctxkeep",
        version=__version__,
        instructions=INSTRUCTIONS,
        log_level=settings.log_level,
        load=load,
    )
