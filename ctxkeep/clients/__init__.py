"""Agent clients, one folder each (`claude_code/`, …), over the shared client core (`core/`).

A client folder holds what is specific to one client: its hooks, its transcript reader, install/uninstall and its
doctor checks. Clients import tools, models and the core; never `ctxkeep.server`.
"""
