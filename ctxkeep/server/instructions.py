"""The server instructions a client puts before its model (at most 2,000 characters): when to use which tool."""

INSTRUCTIONS = """\
ctxkeep keeps your task's state outside your context, so compaction or a restart loses nothing.
- Resuming (new session, after compaction or restart): checkpoint_list, then checkpoint_load(task_id); trust its brief \
over your memory and follow it.
- checkpoint_save the whole state (goal, constraints, pending, completed, decisions, facts with exact values, \
approvals, next_action) at every semantic boundary (a phase ends, a decision, an approval request, a subagent \
returns), before a risky step (delete, migrate, deploy, pay) and before your context gets long; pass expected_version = the version you loaded. \
Items leave only by moving to completed, or to dropped with a reason; a refused save lists each violation: fix the \
state and save again.
- Right before a side effect on an external system (payment, email, deploy, ticket): action_intent with the key \
'task:object:step'; right after it: action_result. An intent without a result means: look the key up in the system \
of record before retrying.
- Long tool output, files, pages: evidence_put them and keep only the ref and preview; evidence_search finds them, \
evidence_get brings back the exact lines, matches or chunk.
- build_working_set(task_id, focus) rebuilds your context from the records within a token budget, stable first; \
use it after compaction and at each step of a long task, and follow its compress advice.
- compress_history shrinks a long history (outputs to evidence, old turns to a digest); verify_checkpoint checks a \
state or your summary without saving.
- memory_write only what outlives the task, with its source (a confirmed preference, a fact with a receipt, an \
approved policy, a learned skill), never a guess.
"""
