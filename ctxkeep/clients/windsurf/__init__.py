"""Windsurf (Cascade): its hooks mapped onto the client core (`hooks.py`), `ctxkeep install|uninstall windsurf`
(`install.py`: the server, the hooks and a rules file) and the doctor's Windsurf checks (`doctor.py`). No Windsurf
runs here: the formats follow docs.windsurf.com/windsurf/cascade/hooks, /cascade/mcp and /cascade/memories, and the
tests check the files written against them.

Imports `clients.core`; never `ctxkeep.server` or another client's folder.
"""
