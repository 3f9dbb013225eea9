"""Helpers the capabilities share: chat-message formats (`messages`), negated clauses (`negation`), the short view of
a tool output (`preview`), how an evidence ref is formed (`refs`) and search terms (`search_terms`).

Empty on purpose: the hooks import single modules from here on every tool call, standard library only.
"""
