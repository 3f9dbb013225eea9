"""Capabilities: async functions over a Store and pydantic models, one subpackage each.

`checkpoint`, `evidence`, `compression`, `working_set`, `memory`, `journal`; beside them the helpers they share:
`scope` (where a call runs), `messages` (chat-message formats), `terms` (search terms), `redact`/`redaction` and
`preview` (what is stored and what stays in context), `negation` and `summary_check` (what a summary must keep), `refs`.
Tools import models, storage and `ctxkeep.text`/`tokens`; one capability uses another only through its `__init__`.
"""
