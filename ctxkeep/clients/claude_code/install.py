"""`ctxkeep install claude-code` / `uninstall claude-code`: register the server and the hooks in Claude Code.

Scopes (Claude Code's configuration folder is `CLAUDE_CONFIG_DIR`, else `~/.claude`):
- `local` (the default): the hooks in `<project>/.claude/settings.local.json` (not committed) and the server with
  `claude mcp add --scope local` (this project, this machine); absolute paths, since nothing here is shared;
- `project`: only what can be committed: the hooks in `<project>/.claude/settings.json` and the server in
  `<project>/.mcp.json`, as the bare command `ctxkeep` (resolved on each machine's PATH: install ctxkeep with pipx,
  or put its environment's bin folder on PATH); an entry there with settings install does not write (`env`, `cwd`)
  is named and refused unless `--keep-env`;
- `user`: the hooks in `<config>/settings.json` and the server with `claude mcp add --scope user`.
Installing is idempotent and keeps every other setting and hook; a changed file is backed up first
(`<file>.ctxkeep.bak`); a file that is not a JSON object is refused and left untouched. Uninstalling removes exactly
what installing added, and restores a file byte for byte when nothing else in it changed since (its backup is
then removed; the backup of a file changed since is kept, and named).
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from ctxkeep.clients.core.config_files import (
    BACKUP_SUFFIX,
    FileChange,
    apply,
    diff,
    dump_json,
    find_executable,
    json_list,
    json_object,
    read_json,
    restored,
)
from ctxkeep.clients.core.server_entry import foreign_settings, shown_settings
from ctxkeep.errors import InvalidInput
from ctxkeep.project import claude_config_dir
from ctxkeep.tool_names import SERVER_NAME

Scope = Literal["local", "project", "user"]
PORTABLE_COMMAND = "ctxkeep"
# event -> (ctxkeep hook, matcher): every tool call and prompt, stops, and the compaction cycle
HOOKS: dict[str, tuple[str, str | None]] = {
    "PreCompact": ("pre-compact", None),
    "SessionStart": ("session-start", None),  # every source: startup gets the brief, clear nothing
    "PostCompact": ("post-compact", None),
    "PostToolUse": ("post-tool-use", "*"),
    "PostToolUseFailure": ("post-tool-use-failure", "*"),
    "UserPromptSubmit": ("user-prompt-submit", None),
    "Stop": ("stop", None),
}
# matchers earlier versions wrote: a reinstall or uninstall takes those groups for ours too
EARLIER_MATCHERS = {"session-start": ("compact|resume",)}
LISTING = {
    "files": ".claude/settings.local.json + `claude mcp add --scope local` (local); .claude/settings.json + .mcp.json "
    "(project); <config>/settings.json + `claude mcp add --scope user` (user)",
    "events": "SessionStart, UserPromptSubmit, PostToolUse, PostToolUseFailure, PreCompact, PostCompact, Stop",
    "injects": "a new session's brief of the project's open work (2,000 characters); the records' view (9,000) at "
    "resume; the repair of the compaction summary (4,000); what the summary must keep, to the summarizer (PreCompact)",
    "offload": "large outputs replaced by their shaped view and ref",
    "gate": "Stop blocks once",
}
__all__ = [
    "HOOKS",
    "LISTING",
    "FileChange",
    "Scope",
    "apply",
    "diff",
    "double_install",
    "find_executable",
    "mcp_command",
    "plan",
    "registered",
    "run_claude",
    "settings_path",
]


def hook_command(executable: str, hook: str) -> str:
    return f"{shlex.quote(executable)} hook {hook}"


def _is_our_command(command: Any, hook: str) -> bool:
    """A command an install wrote: `<absolute path>/ctxkeep hook <hook>` (from any install path: a reinstall from
    elsewhere replaces it), or the portable `ctxkeep hook <hook>` of project scope."""
    if not isinstance(command, str):
        return False
    try:
        parts = shlex.split(command)
    except ValueError:  # unbalanced quotes: somebody's own shell line
        return False
    if len(parts) != 3 or parts[1:] != ["hook", hook] or Path(parts[0]).name != "ctxkeep":
        return False
    return command == hook_command(parts[0], hook) and (Path(parts[0]).is_absolute() or parts[0] == PORTABLE_COMMAND)


def _is_our_group(group: Any, hook: str, matcher: str | None) -> bool:
    """A hook group exactly as install writes it, or as an earlier version wrote it (same keys, the matcher, one
    command of ours)."""
    matchers = (matcher, *EARLIER_MATCHERS.get(hook, ()))
    if not isinstance(group, dict) or set(group) != ({"hooks", "matcher"} if group.get("matcher") else {"hooks"}):
        return False
    inner = group["hooks"]
    return (
        group.get("matcher") in matchers
        and isinstance(inner, list)
        and len(inner) == 1
        and isinstance(inner[0], dict)
        and set(inner[0]) == {"type", "command"}
        and inner[0]["type"] == "command"
        and _is_our_command(inner[0]["command"], hook)
    )


def _without_our_hooks(groups: list[Any], hook: str, matcher: str | None) -> list[Any]:
    return [group for group in groups if not _is_our_group(group, hook, matcher)]


def settings_with_hooks(path: Path, executable: str) -> FileChange:
    before, data = read_json(path)
    hooks = json_object(data, "hooks", path)
    had_ours = False
    for event, (hook, matcher) in HOOKS.items():
        listed = json_list(hooks, event, path, where="hooks.")
        groups = _without_our_hooks(listed, hook, matcher)
        had_ours = had_ours or len(groups) < len(listed)
        ours: dict[str, Any] = {"hooks": [{"type": "command", "command": hook_command(executable, hook)}]}
        hooks[event] = groups + [{"matcher": matcher, **ours} if matcher else ours]
    return FileChange(path, before, dump_json(data), backup=not had_ours)  # a reinstall keeps the original's backup


def settings_without_hooks(path: Path) -> FileChange:
    before, data = read_json(path)
    hooks = data.get("hooks")
    if isinstance(hooks, dict):
        for event, (hook, matcher) in HOOKS.items():
            if isinstance(hooks.get(event), list):
                hooks[event] = _without_our_hooks(hooks[event], hook, matcher)
                if not hooks[event]:
                    del hooks[event]
        if not hooks:
            del data["hooks"]
    return FileChange(path, before, restored(path, before, data))


def our_hook_commands(path: Path) -> set[str]:
    """The commands of the hooks an install wrote in a settings file (none when it is missing or not JSON)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    hooks = data.get("hooks") if isinstance(data, dict) else None
    found = set()
    for event, (hook, matcher) in HOOKS.items():
        groups = hooks.get(event) if isinstance(hooks, dict) else None
        for group in groups if isinstance(groups, list) else []:
            if _is_our_group(group, hook, matcher):
                found.add(str(group["hooks"][0]["command"]))
    return found


def double_install(project: Path, config: Path) -> str | None:
    """What to say when ctxkeep's hooks are installed at more than one scope with different commands (an absolute path
    at local or user scope, the bare `ctxkeep` at project scope): Claude Code then runs every hook twice, since it
    merges the hooks of every settings file and deduplicates only identical commands. None when each runs once."""
    scopes: tuple[Scope, ...] = ("project", "local", "user")
    installed = {scope: our_hook_commands(settings_path(scope, project, config)) for scope in scopes}
    installed = {scope: commands for scope, commands in installed.items() if commands}
    if len(installed) < 2 or len({frozenset(c) for c in installed.values()}) < 2:
        return None
    keep = "project" if "project" in installed else "user"  # the team's file, else the one that covers every project
    fixes = " and ".join(f"ctxkeep uninstall claude-code --scope {scope}" for scope in installed if scope != keep)
    return (
        f"ctxkeep's hooks are installed at {' and '.join(installed)} scope: Claude Code runs every hook twice (each "
        f"tool call, prompt and injection recorded and shown twice); keep one: {fixes}"
    )


def mcp_with_server(path: Path, executable: str, keep_env: bool = False) -> FileChange:
    """The server registered under `ctxkeep`; only command and args change. An existing entry's other settings (env,
    cwd, a url: install never writes them) are named and refused (InvalidInput, nothing written), or kept as they are
    with `keep_env`: a committed file's env may be the team's shared database or a redirect of this user's data to a
    host they never chose, and only the user can tell which."""
    before, data = read_json(path)
    servers = json_object(data, "mcpServers", path)
    existing = servers.get(SERVER_NAME)
    foreign = foreign_settings(existing) if isinstance(existing, dict) else {}
    if foreign and not keep_env:
        raise InvalidInput(
            f"{path}: the ctxkeep server entry has settings install did not write: {shown_settings(foreign)}. They "
            "decide where this project's data goes (CTXKEEP_DB) or what runs: remove them from the entry, or keep "
            "them with --keep-env if you trust them (nothing was changed)"
        )
    servers[SERVER_NAME] = {
        **(existing if isinstance(existing, dict) else {}),
        "command": executable,
        "args": ["serve"],
    }
    return FileChange(path, before, dump_json(data), backup=not _is_our_server(existing))


def _is_our_server(entry: Any) -> bool:
    """An entry exactly as install writes it."""
    return (
        isinstance(entry, dict)
        and set(entry) == {"command", "args"}
        and entry["args"] == ["serve"]
        and (Path(str(entry["command"])).is_absolute() or entry["command"] == PORTABLE_COMMAND)
        and Path(str(entry["command"])).name == "ctxkeep"
    )


def _backed_up_entry(path: Path) -> Any:
    """The `ctxkeep` server entry as it was before install changed the file (None when there was none)."""
    backup = path.with_name(path.name + BACKUP_SUFFIX)
    try:
        servers = json.loads(backup.read_text(encoding="utf-8")).get("mcpServers") if backup.exists() else None
    except (OSError, ValueError, AttributeError):
        return None
    return servers.get(SERVER_NAME) if isinstance(servers, dict) else None


def mcp_without_server(path: Path) -> FileChange:
    """Our entry removed; an entry install only updated goes back to what it was before."""
    before, data = read_json(path)
    servers = data.get("mcpServers")
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    original = _backed_up_entry(path)
    if isinstance(servers, dict) and entry is not None and (_is_our_server(entry) or original is not None):
        if original is not None:
            servers[SERVER_NAME] = original
        else:
            del servers[SERVER_NAME]
        if not servers:
            del data["mcpServers"]
    return FileChange(path, before, restored(path, before, data))


def settings_path(scope: Scope, project: Path, config: Path) -> Path:
    if scope == "user":
        return config / "settings.json"
    return project / ".claude" / ("settings.local.json" if scope == "local" else "settings.json")


def plan(
    action: Literal["install", "uninstall"],
    scope: Scope,
    project: Path,
    config: Path,
    executable: str,
    keep_env: bool = False,
) -> list[FileChange]:
    """The file changes an install or uninstall makes (nothing is written); `config` is Claude Code's config folder;
    `keep_env`: keep the settings a `.mcp.json` entry has that install did not write (else they are refused)."""
    command = PORTABLE_COMMAND if scope == "project" else executable
    settings = settings_path(scope, project, config)
    if action == "install":
        server = [mcp_with_server(project / ".mcp.json", command, keep_env)] if scope == "project" else []
        return [settings_with_hooks(settings, command), *server]
    changes = [settings_without_hooks(settings)]
    return changes + ([mcp_without_server(project / ".mcp.json")] if scope == "project" else [])


def state_file(env: Mapping[str, str]) -> Path:
    """Where Claude Code keeps its own state (servers of local and user scope): `<CLAUDE_CONFIG_DIR>/.claude.json`,
    else `~/.claude.json`."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return Path(claude_config_dir(env)) / ".claude.json"
    return Path(env.get("HOME") or Path.home()) / ".claude.json"


def registered(scope: Scope, project: Path, env: Mapping[str, str]) -> dict[str, Any] | None:
    """The `ctxkeep` server Claude Code has registered at a local or user scope, or None."""
    try:
        data = json.loads(state_file(env).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    holder = data.get("projects", {}).get(str(project), {}) if scope == "local" and isinstance(data, dict) else data
    servers = holder.get("mcpServers") if isinstance(holder, dict) else None
    entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    return entry if isinstance(entry, dict) else None


def mcp_command(action: Literal["install", "uninstall"], scope: Scope, executable: str) -> list[str] | None:
    """The `claude mcp` call that registers (or removes) the server at a local or user scope; None for project."""
    if scope == "project":
        return None
    if action == "install":
        return ["claude", "mcp", "add", "--scope", scope, SERVER_NAME, "--", executable, "serve"]
    return ["claude", "mcp", "remove", "--scope", scope, SERVER_NAME]


def run_claude(command: list[str], cwd: Path) -> str:
    """Run the `claude` CLI when it is installed; otherwise say which command to run."""
    shown = " ".join(shlex.quote(part) for part in command)
    if shutil.which("claude") is None:
        return f"`claude` is not on PATH; run this yourself (in {cwd}): {shown}"
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, cwd=cwd, check=False)
    if done.returncode != 0:
        return f"{shown} failed ({done.returncode}): {(done.stderr or done.stdout).strip()[:500]}"
    return f"ran: {shown}"


def run(
    action: Literal["install", "uninstall"],
    scope: Scope,
    project: Path,
    env: Mapping[str, str],
    dry_run: bool,
    keep_env: bool = False,
) -> list[str]:
    """Install or uninstall at `scope`, or with `dry_run` show what would change; one line per thing done."""
    executable = find_executable()
    changes = plan(action, scope, project, Path(claude_config_dir(env)), executable, keep_env)
    claude = mcp_command(action, scope, executable)
    present = registered(scope, project, env) if scope != "project" else None
    if (
        claude
        and action == "install"
        and present
        and present.get("command") == executable
        and present.get("args") == ["serve"]
    ):
        claude = None  # already registered exactly so: nothing to run, nothing to say twice
    elif claude and action == "uninstall" and scope != "project" and present is None and state_file(env).exists():
        claude = None
    if dry_run:
        return [diff(change) or f"unchanged {change.path}" for change in changes] + (
            [f"would run: {' '.join(claude)}"] if claude else []
        )
    lines = apply(changes, backup=action == "install")
    if claude:
        lines.append(run_claude(claude, project))
    elif scope != "project":
        lines.append(
            f"the server is {'registered' if action == 'install' else 'not registered'} in Claude Code ({scope} scope)"
        )
    doubled = double_install(project, Path(claude_config_dir(env))) if action == "install" else None
    return lines + ([f"note: {doubled}"] if doubled else [])
