"""Capabilities: async functions over a Store and pydantic models, one subpackage each.

`checkpoint`, `evidence`, `compression`, `working_set`, `memory`, `journal`; beside them `scope` (where a call
runs), `messages` (chat-message formats) and `stats`. Tools import models, storage and the shared helpers
(`ctxkeep.text`, `ctxkeep.tokens`); one capability uses another only through its `__init__`. No MCP imports.
"""
