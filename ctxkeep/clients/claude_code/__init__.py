"""Claude Code: the PreCompact and SessionStart hooks, the session task read from its transcripts,
`ctxkeep install|uninstall claude-code` and the doctor's Claude Code checks.

Imports tools, models and `clients.core`; never `ctxkeep.server`.
"""
