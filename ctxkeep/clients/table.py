"""The agent clients ctxkeep works with, one row each: what the CLI lists, installs and dispatches hooks to.

A client is a folder `ctxkeep/clients/<folder>/` plus its row here. The folder holds
- `hooks.py`: `run(event, stdin, stdout, env) -> int` (`ctxkeep hook <name> <event>`, over `clients.core.events`);
- `worker.py` when its hooks start the detached ingest: `run_worker(stdin, env) -> int` (`ctxkeep hook <name> worker`);
- `install.py`: `LISTING` (what `ctxkeep install --list` says of it) and either `plan` and `notes` (the file changes
  `ctxkeep install|uninstall` applies) or a `run` of its own (Claude Code registers its server with `claude mcp add`);
- `doctor.py`: `checks(project, env)`.
Standard library only: the CLI reads the table before it dispatches a hook.
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing costs a hook process ~3 ms (ctxkeep/named_tuple.py)
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from ctxkeep.named_tuple import NamedTuple


class AgentClient(NamedTuple):
    """A client: its name in the CLI, its folder, its title for people, and its install scopes (the default first)."""

    name: str
    folder: str
    title: str
    scopes: tuple[str, ...]

    def module(self, part: str) -> str:
        """The module of this client's `part` (hooks, worker, install, doctor)."""
        return f"ctxkeep.clients.{self.folder}.{part}"


CLIENTS = (
    AgentClient("claude-code", "claude_code", "Claude Code", ("local", "project", "user")),
    AgentClient("codex", "codex", "Codex CLI", ("user", "project")),
    AgentClient("gemini", "gemini", "Gemini CLI", ("user", "project")),
    AgentClient("cursor", "cursor", "Cursor", ("project", "user")),
    AgentClient("vscode", "vscode", "VS Code (Copilot agent mode)", ("project", "user")),
    AgentClient("windsurf", "windsurf", "Windsurf", ("user", "project")),
    AgentClient("cline", "cline", "Cline", ("project", "user")),
)
BY_NAME = {client.name: client for client in CLIENTS}
# Claude Code's hooks are installed as `ctxkeep hook <event>` (no client name): the events of that short form
CLAUDE_CODE_EVENTS = (
    "post-tool-use",
    "post-tool-use-failure",
    "user-prompt-submit",
    "stop",
    "session-start",
    "pre-compact",
    "post-compact",
)
# what each install scope means, for `--scope` help
SCOPE_MEANINGS = {
    "local": "this project on this machine only, in files that are not committed",
    "project": "only what can be committed in the project, the command `ctxkeep` on PATH",
    "user": "every project of this user",
}


def scope_help() -> str:
    """`--scope` help: each client's scopes, the default first, and what each scope means."""
    groups: dict[tuple[str, ...], list[str]] = {}
    for client in CLIENTS:
        groups.setdefault(client.scopes, []).append(client.name)
    per_client = "; ".join(f"{', '.join(names)}: {_choices(scopes)}" for scopes, names in groups.items())
    meanings = "; ".join(f"{scope}: {text}" for scope, text in SCOPE_MEANINGS.items())
    return f"where to install: {per_client}. {meanings}"


def _choices(scopes: tuple[str, ...]) -> str:
    rest = scopes[1:]
    return f"{scopes[0]} (default)" + "".join(f", {scope}" for scope in rest[:-1]) + (f" or {rest[-1]}" if rest else "")
