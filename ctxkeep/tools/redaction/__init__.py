"""The redaction rules, by family: provider formats, web and command-line shapes, assignments to secret names.

`ctxkeep.tools.redaction.redact` applies them; `values` says what counts as a secret value, `rules` holds the
view of the text every rule reads.
"""

from ctxkeep.tools.redaction.assignments import ASSIGNMENT_RULES
from ctxkeep.tools.redaction.providers import PROVIDER_RULES
from ctxkeep.tools.redaction.rules import Context, Rule, Span
from ctxkeep.tools.redaction.web import WEB_RULES

# Order matters where spans overlap: the first rule to claim a span names its kind.
RULES: list[Rule] = [*PROVIDER_RULES, *WEB_RULES, *ASSIGNMENT_RULES]

__all__ = ["RULES", "Context", "Rule", "Span"]
