"""The action journal: an intent before an external side effect, its result after, one entry per idempotency key.

Imports `evidence` (receipts, redaction), models and storage.
"""

from ctxkeep.tools.journal.actions import action_intent, action_result, describe, open_intent_warning, to_action
from ctxkeep.tools.journal.listing import journal_entries

__all__ = ["action_intent", "action_result", "describe", "journal_entries", "open_intent_warning", "to_action"]
