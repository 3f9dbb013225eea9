"""The evidence store: raw output put once (redacted, previewed), got back exactly, searched, deleted.

Redacts with `tools.redact`, previews with `tools.preview`, indexes with `tools.terms` (helpers every capability
shares). Imports models, storage and those helpers; no other capability.
"""

from ctxkeep.tools.evidence.get import evidence_get
from ctxkeep.tools.evidence.inbox import take_offloads
from ctxkeep.tools.evidence.records import (
    CONTENTS,
    evidence_delete,
    evidence_gc,
    evidence_put,
    evidence_ref,
    load_row,
    stored_record,
)
from ctxkeep.tools.evidence.search import evidence_search, ranked_hits

__all__ = [
    "CONTENTS",
    "evidence_delete",
    "evidence_gc",
    "evidence_get",
    "evidence_put",
    "evidence_ref",
    "evidence_search",
    "load_row",
    "ranked_hits",
    "stored_record",
    "take_offloads",
]
