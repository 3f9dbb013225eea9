"""Cline: its hooks mapped onto the client core (`hooks.py`), `ctxkeep install|uninstall cline` (`install.py`: the
server in Cline's MCP settings, one hook script per event) and the doctor's Cline checks (`doctor.py`). No Cline runs
here: the formats follow docs.cline.bot/customization/hooks (and its hook reference) and docs.cline.bot/mcp, and the
tests check the files written against them.

Imports `clients.core`; never `ctxkeep.server` or another client's folder.
"""
