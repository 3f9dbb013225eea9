"""Codex CLI: its hooks mapped onto the client core (`hooks.py`), its rollout JSONL read into session records
(`rollout.py`), the detached ingest (`worker.py`), `ctxkeep install|uninstall codex` (`install.py`) and the doctor's
Codex checks (`doctor.py`).

Imports `clients.core`, tools, models and storage; never `ctxkeep.server` or another client's folder.
"""
