"""Capabilities: async functions over a Store and pydantic models, one subpackage each.

`checkpoint`, `evidence`, `compression`, `working_set`, `memory`, `journal`; beside them the helpers they share:
`scope` (where a call runs), `messages` (chat-message formats), `terms` (search terms of every index), `stats`.
Tools import models, storage and `ctxkeep.text`/`tokens`; one capability uses another only through its `__init__`.
"""
