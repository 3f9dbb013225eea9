"""The `ctxkeep` command: serve, demo, doctor, install, hooks, and inspection of what is stored.

Calls tools and clients; only `serve` (and the demo's client) reach the MCP SDK and `ctxkeep.server`.
"""

from ctxkeep.cli.main import main

__all__ = ["main"]
