"""`ctxkeep install codex` / `uninstall codex`: the server in Codex's config.toml and the hooks in its hooks.json.

Scopes (Codex's folder is CODEX_HOME, else ~/.codex; developers.openai.com/codex/config-reference, /codex/hooks):
- `user` (the default): `<codex>/config.toml` `[mcp_servers.ctxkeep]` and `<codex>/hooks.json`, absolute paths;
- `project`: `<project>/.codex/config.toml` and `<project>/.codex/hooks.json`, the portable command `ctxkeep` (files
  that can be committed). Codex loads them only once the project is trusted (`codex exec --trust`, or
  `[projects."<project>"] trust_level = "trusted"` in the user config.toml).
The server gets `default_tools_approval_mode = "approve"` (`codex exec`, approval policy `never`, fails every MCP call
without it, and ctxkeep's tools write only ctxkeep's own store) and `required = true` (without it `codex exec` may start
its one turn before the server is up, and the whole turn runs without ctxkeep's tools; seen in tests/e2e). config.toml is TOML, so ctxkeep's table is one block
between two marker comments, appended; a file whose `mcp_servers.ctxkeep` ctxkeep did not write, or that is not valid
TOML, is refused untouched. New or changed hooks run only once trusted in Codex (`/hooks`), see the doctor.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from ctxkeep.clients.codex import toml_reader
from ctxkeep.clients.codex.hooks import CLIENT, CONTEXT_LIMIT_TOKENS, codex_home
from ctxkeep.clients.core.config_files import BACKUP_SUFFIX, FileChange
from ctxkeep.clients.core.install_files import (
    PORTABLE_COMMAND,
    add_hooks,
    hook_command,
    installed,
    remove_hooks,
    uninstalled,
)
from ctxkeep.errors import InvalidInput

Scope = Literal["user", "project"]
# event -> matcher (None: every occurrence)
EVENTS: dict[str, str | None] = {
    "SessionStart": None,  # every source: startup gets the startup brief, clear nothing
    "UserPromptSubmit": None,
    "PostToolUse": None,
    "Stop": None,
    "PreCompact": None,
}
LISTING = {
    "files": "<codex>/config.toml [mcp_servers.ctxkeep] + <codex>/hooks.json (user); .codex/config.toml + .codex/hooks.json "
    "(project: Codex loads them only in a trusted project)",
    "events": "SessionStart, UserPromptSubmit, PostToolUse, Stop, PreCompact",
    "injects": "SessionStart additionalContext: a new session's brief of the project's open work (2,000 characters), "
    "the records' view at resume (9,000) or the repair of the compaction summary (4,000); additionalContextLimit "
    "4,000 tokens so Codex does not spill it to a file",
    "offload": "large outputs go to evidence but stay in the context (Codex ignores updatedMCPToolOutput)",
    "gate": "Stop blocks once (decision block)",
    "missing": "hooks run only once trusted in Codex (/hooks); PostCompact carries no summary (read from the rollout); "
    "PreCompact output does not reach Codex's summarizer (no compaction brief); "
    "the server is `required` (codex exec waits for it, and does not start without it)",
}
BEGIN = "# ctxkeep: added by `ctxkeep install codex`; `ctxkeep uninstall codex` removes it"
END = "# ctxkeep: end"
_BLOCK = re.compile(r"\n*" + re.escape(BEGIN) + r"\n.*?" + re.escape(END) + r"\n?", re.DOTALL)
# exactly what install added: the block, and the blank line it put before it (a line break ending another line stays)
_OWN_LINES = re.compile(r"(?:(?<=\n)\n)?" + re.escape(BEGIN) + r"\n.*?" + re.escape(END) + r"(?:\n|$)", re.DOTALL)


def entry(executable: str, event: str) -> dict[str, Any]:
    """One hook group as Codex's hooks.json takes it (timeouts in seconds)."""
    handler: dict[str, Any] = {"type": "command", "command": hook_command(executable, CLIENT, event), "timeout": 30}
    if event == "SessionStart":
        handler["additionalContextLimit"] = CONTEXT_LIMIT_TOKENS
    matcher = EVENTS.get(event)
    return {"matcher": matcher, "hooks": [handler]} if matcher else {"hooks": [handler]}


def session_start_before_the_brief(executable: str, event: str) -> dict[str, Any]:
    """The hook group versions before the startup brief wrote: SessionStart matched on `resume|compact` only."""
    group = entry(executable, event)
    return {"matcher": "resume|compact", **group} if event == "SessionStart" else group


EARLIER = (session_start_before_the_brief,)  # entry shapes earlier versions wrote: reinstall and uninstall take them


def server_block(executable: str) -> str:
    return (
        "\n".join(
            [
                BEGIN,
                "[mcp_servers.ctxkeep]",
                f"command = {json.dumps(executable)}",
                'args = ["serve"]',
                'default_tools_approval_mode = "approve"',
                "required = true",
                END,
            ]
        )
        + "\n"
    )


def _toml(path: Path, text: str) -> dict[str, Any]:
    try:
        return toml_reader.loads(text)
    except toml_reader.TOMLDecodeError as exc:
        raise InvalidInput(
            f"{path} is not valid TOML ({exc}); fix or move it, then run this again (nothing was changed)"
        ) from None


def _read(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput(
            f"{path} cannot be read as UTF-8 text ({exc}); fix or move it, then run this again (nothing was changed)"
        ) from None


def _blocks(text: str) -> list[str]:
    return [m.group(0).strip("\n") + "\n" for m in _BLOCK.finditer(text)]


def _tidy(text: str) -> str:
    """`text` without ctxkeep's block, ending in exactly one newline ("" when nothing else is left)."""
    body = _BLOCK.sub("\n", text).rstrip("\n")
    return body + "\n" if body.strip() else ""


def config_with_server(path: Path, executable: str) -> FileChange:
    """config.toml with ctxkeep's block last (an earlier install's block replaced, the rest kept). InvalidInput,
    nothing written, when the file is not TOML, holds a `mcp_servers.ctxkeep` ctxkeep did not write, or a block of
    ours edited by hand."""
    before = _read(path) or ""
    for block in _blocks(before):
        command = _toml(path, block).get("mcp_servers", {}).get("ctxkeep", {}).get("command")
        if not isinstance(command, str) or block != server_block(command):
            raise InvalidInput(
                f"{path}: the ctxkeep block was edited by hand; remove it (from {BEGIN!r} to {END!r}), "
                "then run this again (nothing was changed)"
            )
    base = _tidy(before)
    found = _toml(path, base).get("mcp_servers", {})
    if isinstance(found, dict) and "ctxkeep" in found:
        raise InvalidInput(
            f"{path} already has [mcp_servers.ctxkeep] that ctxkeep install did not write; rename or "
            "remove it, then run this again (nothing was changed)"
        )
    after = base + ("\n" if base else "") + server_block(executable)
    parsed = _toml(path, after).get("mcp_servers", {}).get("ctxkeep")
    if parsed != {"command": executable, "args": ["serve"], "default_tools_approval_mode": "approve", "required": True}:
        raise InvalidInput(
            f"{path}: ctxkeep's table cannot be appended to this file; add it by hand or fix the file "
            "(nothing was changed)"
        )
    return FileChange(path, before if path.exists() else None, after, backup=BEGIN not in before)


def config_without_server(path: Path) -> FileChange:
    """config.toml without ctxkeep's lines, everything else byte for byte (comments added since install too: they are
    text, which parsed TOML would not see); the backup's bytes when the rest is exactly what install left of it;
    nothing when install created the file and nothing else was added."""
    before = _read(path)
    if before is None or BEGIN not in before:
        return FileChange(path, before, before)
    after = _OWN_LINES.sub("", before)
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    if backup.exists():
        original = _read(backup) or ""
        if after == _tidy(original):  # unchanged since install, which only evened out the original's last newlines
            return FileChange(path, before, original)
    return FileChange(path, before, None if not after.strip() and not backup.exists() else after)


def paths(scope: Scope, project: Path, env: Mapping[str, str]) -> tuple[Path, Path]:
    """(config.toml, hooks.json) of a scope."""
    folder = Path(codex_home(env)) if scope == "user" else project / ".codex"
    return folder / "config.toml", folder / "hooks.json"


def plan(
    action: Literal["install", "uninstall"], scope: Scope, project: Path, env: Mapping[str, str], executable: str
) -> list[FileChange]:
    """The file changes an install or uninstall makes (nothing is written)."""
    config, hooks = paths(scope, project, env)
    command = PORTABLE_COMMAND if scope == "project" else executable
    if action == "install":
        hooks_change = installed(hooks, add_hooks(command, CLIENT, list(EVENTS), entry, earlier=EARLIER))
        return [config_with_server(config, command), hooks_change]
    return [
        config_without_server(config),
        uninstalled(hooks, remove_hooks(CLIENT, list(EVENTS), entry, earlier=EARLIER)),
    ]


def notes(action: str, scope: Scope, project: Path) -> list[str]:
    """What the user must still do in Codex itself."""
    if action != "install":
        return []
    lines = [
        "Codex runs new hooks only once you trust them: start `codex` and approve them in /hooks "
        "(or pass --dangerously-bypass-hook-trust to one `codex exec`)."
    ]
    if scope == "project":
        lines.append(
            f"Codex loads {project / '.codex'} only in a trusted project: run `codex exec --trust` there once, or add "
            f'[projects."{project}"] trust_level = "trusted" to ~/.codex/config.toml.'
        )
    return lines
