"""History compression: old tool outputs offloaded as evidence, old turns folded into a digest, recent kept.

Reads Claude Code transcripts (within allowed roots) and chat histories. Imports `checkpoint` (the summary rules)
and `evidence` (offload), `tools.messages`, models and storage.
"""

from ctxkeep.tools.compression.compress import compress_history, semantic_boundary
from ctxkeep.tools.compression.transcript import allowed_roots, resolve_transcript

__all__ = ["allowed_roots", "compress_history", "resolve_transcript", "semantic_boundary"]
