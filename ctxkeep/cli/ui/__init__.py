"""`ctxkeep ui`: a local, read-only web page of what the agent sees, served on loopback behind a token.

Server-rendered HTML (Starlette and uvicorn, which come with the MCP SDK), no script, no build step, no CDN: the style
sheet ships in `static/`. Every stored text is escaped; only http(s) sources become links. Reads go through the tools
and the Store interface, like the other inspection commands.
"""
