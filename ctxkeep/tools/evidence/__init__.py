"""The evidence store: raw output put once (redacted, previewed), got back exactly, searched, deleted.

Owns redaction and previews; its index uses the shared search terms (`tools.terms`). Imports models, storage and the
shared helpers only; no other capability.
"""

from ctxkeep.tools.evidence.get import evidence_get
from ctxkeep.tools.evidence.preview import shape_tool_output
from ctxkeep.tools.evidence.records import CONTENTS, evidence_delete, evidence_gc, evidence_put, load_row
from ctxkeep.tools.evidence.redact import redact_secrets
from ctxkeep.tools.evidence.search import evidence_search, ranked_hits

__all__ = [
    "CONTENTS", "evidence_delete", "evidence_gc", "evidence_get", "evidence_put", "evidence_search", "load_row",
    "ranked_hits", "redact_secrets", "shape_tool_output",
]
