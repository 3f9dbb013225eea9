"""The working set: the next step's context assembled from the records within a token budget, stable first.

Budget, slots, passages and evidence retrieval live here. Imports the public functions of `checkpoint`,
`evidence`, `memory`, `journal` and `compression` (read-only), `tools.messages`, models and storage.
"""

from ctxkeep.tools.working_set.assemble import build_working_set
from ctxkeep.tools.working_set.delivered import delivered

__all__ = ["build_working_set", "delivered"]
