"""The start-up floor: a one-tool MCPServer on the same SDK, served over stdio as the SDK serves it.

`bench/startup.py` starts it beside `ctxkeep serve`, the same way (a new interpreter, the same environment and pipes),
and compares their times to `initialize` and `tools/list`. Its one tool, `ping`, is the cheapest tool call there is.
"""

from mcp.server.mcpserver import MCPServer

server = MCPServer("one-tool")


@server.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


if __name__ == "__main__":
    server.run()
