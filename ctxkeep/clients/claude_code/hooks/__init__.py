"""Claude Code hooks: `ctxkeep hook pre-compact` and `ctxkeep hook session-start`.

They keep a session's task across compaction without the agent's help, and never block the
user: any failure exits 0 with nothing on stdout and one line in the hook log. They import
neither the MCP SDK nor tiktoken (start-up time): budgets are in characters and token counts
are estimates.
"""
