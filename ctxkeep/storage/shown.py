"""The session records that log what the hooks showed the model, for the viewer: `injected` (an injection's text),
`offloaded` (the view of a tool output kept as evidence, under its ref), `blocked` (a Stop-gate block's reason).

They live beside the session's records (`session_records`, keyed by their time) but are no records of the session:
the hooks never read them back, writing one never changes the session's generation, and only the newest
`KEEP_SHOWN` of each kind stay. Standard library only (per-event hooks)."""

SHOWN_KINDS = ("injected", "offloaded", "blocked")
KEEP_SHOWN = 50  # of each kind, per session
