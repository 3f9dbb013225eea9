"""Gemini CLI: its hooks mapped onto the client core (`hooks.py`, tool calls in `tools.py`), its chat files read into
session records (`chat.py`), the detached ingest (`worker.py`), `ctxkeep install|uninstall gemini` (`install.py`) and
the doctor's Gemini checks, folder trust among them (`doctor.py`).

Imports `clients.core`, tools, models and storage; never `ctxkeep.server` or another client's folder.
"""
