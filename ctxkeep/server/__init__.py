"""The MCP adapter: registers tools, resources and prompts; maps domain errors to tool errors."""

from ctxkeep.server.build import build_server

__all__ = ["build_server"]
