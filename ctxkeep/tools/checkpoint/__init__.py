"""Task checkpoints: save (verified against the previous version), load with resume checks, list, diff, handoff.

Also the rules a summary must keep (negations, pending items, approvals, facts) and the task a prompt means when
none is named; task leases (who executes a task) and task bundles (export/import through git). Imports `journal` and
`memory` (for resume checks), models and storage.
"""

from ctxkeep.tools.checkpoint.brief import Section, within_budget
from ctxkeep.tools.checkpoint.bundle import Imported, export_bundle, import_bundle
from ctxkeep.tools.checkpoint.handoff import handoff
from ctxkeep.tools.checkpoint.summary_request import summary_request_text
from ctxkeep.tools.checkpoint.tasks import active_task, task_ids
from ctxkeep.tools.checkpoint.verify import verify_summary
from ctxkeep.tools.checkpoint.versions import (
    checkpoint_diff,
    checkpoint_list,
    checkpoint_load,
    checkpoint_save,
    latest_state,
    load_version,
    parse_state,
    verify_chain,
    verify_checkpoint,
)

__all__ = [
    "Imported",
    "Section",
    "active_task",
    "checkpoint_diff",
    "checkpoint_list",
    "checkpoint_load",
    "export_bundle",
    "import_bundle",
    "checkpoint_save",
    "handoff",
    "latest_state",
    "load_version",
    "parse_state",
    "summary_request_text",
    "task_ids",
    "verify_chain",
    "verify_checkpoint",
    "verify_summary",
    "within_budget",
]
