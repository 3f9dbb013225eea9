"""Capabilities: async functions over a Store and pydantic models, one subpackage each.

`checkpoint`, `evidence`, `compression`, `working_set`, `memory`, `journal`, and `compaction_check` (does a summary
carry what must survive); `redaction` (what is never stored in clear); `shared` (helpers the capabilities share).
Beside them: `scope` (where a call runs), `stats` (what a project holds), `users` (a shared server's tokens).
Tools import models, storage and `ctxkeep.text`/`tokens`; one capability uses another only through its `__init__`.
"""
