"""VS Code (Copilot agent mode): its agent hooks mapped onto the client core (`hooks.py`), `ctxkeep install|uninstall
vscode` (`install.py`) and the doctor's VS Code checks (`doctor.py`). No VS Code runs here: the formats follow
code.visualstudio.com/docs/copilot/customization/hooks (and its hooks reference) and /docs/copilot/reference/mcp-configuration,
and the tests check the files written against them.

Imports `clients.core`; never `ctxkeep.server` or another client's folder.
"""
