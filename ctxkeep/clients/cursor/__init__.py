"""Cursor: its agent hooks mapped onto the client core (`hooks.py`), `ctxkeep install|uninstall cursor` (`install.py`)
and the doctor's Cursor checks (`doctor.py`). There is no Cursor CLI here: the formats follow cursor.com/docs/agent/hooks
and cursor.com/docs/mcp, and the tests check the files written against them.

Imports `clients.core`; never `ctxkeep.server` or another client's folder.
"""
