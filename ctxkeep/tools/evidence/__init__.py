"""The evidence store: raw output put once (redacted, previewed), got back exactly, searched, deleted.

Owns redaction, previews and the search terms every full-text index uses. Imports models, storage and the
shared helpers only; no other capability.
"""

from ctxkeep.tools.evidence.get import evidence_get
from ctxkeep.tools.evidence.preview import shape_tool_output
from ctxkeep.tools.evidence.records import CONTENTS, evidence_delete, evidence_gc, evidence_put, load_row
from ctxkeep.tools.evidence.redact import redact_secrets
from ctxkeep.tools.evidence.search import evidence_search, ranked_hits
from ctxkeep.tools.evidence.terms import index_terms, query_terms, surface_pattern

__all__ = [
    "CONTENTS", "evidence_delete", "evidence_gc", "evidence_get", "evidence_put", "evidence_search", "index_terms",
    "load_row", "query_terms", "ranked_hits", "redact_secrets", "shape_tool_output", "surface_pattern",
]
