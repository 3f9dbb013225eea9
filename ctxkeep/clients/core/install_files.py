"""What every client's install writes into its JSON config files, and how uninstall finds exactly that again.

A client's hooks live in lists under an event name (`hooks.<Event>`); each list element ctxkeep adds is built by the
client's `Entry` from the ctxkeep command, so an element is ctxkeep's when it is exactly what `Entry` builds for its
own command (`<absolute path>/ctxkeep hook <client> <event>` from any install path, or the portable
`ctxkeep hook …`), or what one of the client's `earlier` entries builds (the shapes earlier versions of ctxkeep
wrote, such as another matcher): a reinstall from elsewhere or from an older version replaces it, an uninstall
removes it, a hand-written hook is never touched. The MCP server entry
is the same: an entry named `ctxkeep` that ctxkeep did not write (another server of that name, or ours edited by
hand) is refused, never overwritten. Files that are not JSON objects are refused (nothing written); see
`config_files` for backups, atomic writes and the byte-exact restore.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ctxkeep.clients.core.checks import Check
from ctxkeep.clients.core.config_files import FileChange, dump_json, json_list, json_object, read_json, restored
from ctxkeep.errors import InvalidInput
from ctxkeep.tool_names import SERVER_NAME

PORTABLE_COMMAND = "ctxkeep"
Entry = Callable[[str, str], Any]  # (ctxkeep command, event) -> the list element to add under that event
Server = Callable[[str], dict[str, Any]]  # ctxkeep command -> the server entry


def hook_command(executable: str, client: str, event: str) -> str:
    return f"{shlex.quote(executable)} hook {client} {event}"


def command_of(executable: str) -> str | None:
    """`executable` when it is a ctxkeep command an install writes: an absolute path named ctxkeep, or the portable
    `ctxkeep`; else None."""
    return (
        executable
        if Path(executable).name == "ctxkeep" and (Path(executable).is_absolute() or executable == PORTABLE_COMMAND)
        else None
    )


def _executable_in(value: Any, client: str) -> str | None:
    """The ctxkeep executable a hook element runs (its `command`, or `hooks[0].command` for grouped formats)."""
    if isinstance(value, dict) and isinstance(value.get("hooks"), list) and value["hooks"]:
        value = value["hooks"][0]
    command = value.get("command") if isinstance(value, dict) else None
    if not isinstance(command, str):
        return None
    try:
        parts = shlex.split(command)
    except ValueError:  # unbalanced quotes: somebody's own shell line
        return None
    if len(parts) != 4 or parts[1:3] != ["hook", client]:
        return None
    return command_of(parts[0])


def is_ours(element: Any, client: str, event: str, entry: Entry, earlier: Sequence[Entry] = ()) -> bool:
    """Whether `element` is exactly what `entry` (or one of the `earlier` entry shapes) builds for its own command."""
    executable = _executable_in(element, client)
    return executable is not None and any(element == build(executable, event) for build in (entry, *earlier))


Edit = Callable[[dict[str, Any], Path], None]  # changes a config file's parsed object in place (path: for messages)
Install = tuple[Edit, Edit]  # (install's edit, the uninstall edit that takes it back out)


def add_hooks(
    executable: str,
    client: str,
    events: Sequence[str],
    entry: Entry,
    container: str = "hooks",
    skeleton: Mapping[str, Any] | None = None,
    earlier: Sequence[Entry] = (),
) -> Install:
    """ctxkeep's hook element last under each of `events` (ours from earlier installs replaced, in the current shape
    or an `earlier` one; every other key and hook kept); `skeleton` keys (`"version": 1`) added when absent."""

    def edit(data: dict[str, Any], path: Path) -> None:
        for key, value in (skeleton or {}).items():
            data.setdefault(key, value)
        hooks = json_object(data, container, path)
        for event in events:
            elements = [
                e
                for e in json_list(hooks, event, path, where=f"{container}.")
                if not is_ours(e, client, event, entry, earlier)
            ]
            hooks[event] = elements + [entry(executable, event)]

    return edit, remove_hooks(client, events, entry, container, skeleton, earlier)


def remove_hooks(
    client: str,
    events: Sequence[str],
    entry: Entry,
    container: str = "hooks",
    skeleton: Mapping[str, Any] | None = None,
    earlier: Sequence[Entry] = (),
) -> Edit:
    """ctxkeep's hook elements removed, in the current shape or an `earlier` one (an emptied list and container too;
    a file left holding only `skeleton` keys counts as empty)."""

    def edit(data: dict[str, Any], path: Path) -> None:
        hooks = data.get(container)
        if isinstance(hooks, dict):
            for event in events:
                if isinstance(hooks.get(event), list):
                    hooks[event] = [e for e in hooks[event] if not is_ours(e, client, event, entry, earlier)]
                    if not hooks[event]:
                        del hooks[event]
            if not hooks:
                del data[container]
        if skeleton and set(data) == set(skeleton) and all(data[k] == v for k, v in skeleton.items()):
            data.clear()

    return edit


def _server_is_ours(found: Any, server: Server) -> bool:
    command = found.get("command") if isinstance(found, dict) else None
    return isinstance(command, str) and command_of(command) is not None and found == server(command)


def add_server(executable: str, server: Server, container: str = "mcpServers", name: str = SERVER_NAME) -> Install:
    """ctxkeep's server entry under `container.<name>`; InvalidInput (nothing written) when an entry of that name
    exists that ctxkeep did not write."""

    def edit(data: dict[str, Any], path: Path) -> None:
        servers = json_object(data, container, path)
        found = servers.get(name)
        if found is not None and not _server_is_ours(found, server):
            from ctxkeep.clients.core.server_entry import shown_settings

            shown = shown_settings(found) if isinstance(found, dict) else str(found)[:200]
            raise InvalidInput(
                f"{path} already has an MCP server named {name!r} that ctxkeep install did not write "
                f"({shown}); rename or remove it, then run this again (nothing was changed)"
            )
        servers[name] = server(executable)

    return edit, remove_server(server, container, name)


def remove_server(server: Server, container: str = "mcpServers", name: str = SERVER_NAME) -> Edit:
    """ctxkeep's server entry removed (an entry of that name ctxkeep did not write is left alone)."""

    def edit(data: dict[str, Any], path: Path) -> None:
        servers = data.get(container)
        if isinstance(servers, dict) and _server_is_ours(servers.get(name), server):
            del servers[name]
            if not servers:
                del data[container]

    return edit


def installed(path: Path, *changes: Install) -> FileChange:
    """The file after install's edits (read once; refused untouched when it is not a JSON object). A file that already
    holds ctxkeep's entries (a reinstall) is not backed up again: the backup of the original stays."""
    before, data = read_json(path)
    pristine = json.loads(json.dumps(data))
    for _, undo in changes:
        undo(pristine, path)
    for do, _ in changes:
        do(data, path)
    return FileChange(path, before, dump_json(data), backup=pristine == json.loads(before or "{}"))


def uninstalled(path: Path, *edits: Edit) -> FileChange:
    """The file after uninstall's edits: the backup's bytes when nothing else changed since install, deleted when
    install created it and nothing else is left."""
    before, data = read_json(path)
    for edit in edits:
        edit(data, path)
    return FileChange(path, before, restored(path, before, data))


def found_hooks(data: Any, client: str, events: Sequence[str], container: str = "hooks") -> dict[str, str]:
    """event -> the ctxkeep executable of each installed ctxkeep hook (for the doctor), whatever its exact shape."""
    hooks = data.get(container) if isinstance(data, dict) else None
    found: dict[str, str] = {}
    for event in events:
        for element in hooks.get(event, []) if isinstance(hooks, dict) and isinstance(hooks.get(event), list) else []:
            executable = _executable_in(element, client)
            if executable is not None:
                found[event] = executable
    return found


def resolves(name: str, command: str, client: str) -> Check:
    """A doctor check: a portable `ctxkeep …` command resolves on this machine's PATH; an absolute one exists."""
    import os
    import shutil

    try:
        exe = shlex.split(command)[0]
    except (ValueError, IndexError):
        return Check(name, "fail", f"{command!r} is not a command; run `ctxkeep install {client}` again")
    if exe == PORTABLE_COMMAND:
        found = shutil.which(PORTABLE_COMMAND)
        return Check(
            name,
            "ok" if found else "fail",
            f"{command!r} runs {found}"
            if found
            else f"{command!r}: `ctxkeep` is not on PATH here; install it with pipx, or put its environment's bin on PATH",
        )
    if not (Path(exe).is_file() and os.access(exe, os.X_OK)):
        return Check(
            name, "fail", f"{command!r}: {exe} is missing or not executable; run `ctxkeep install {client}` again"
        )
    return Check(name, "ok", command)


def own_file(path: Path, content: str, action: str) -> FileChange:
    """A whole file that is ctxkeep's own (a rules file, a hook script): created by install, deleted by uninstall.
    InvalidInput (nothing written) when install finds a different file there: somebody else's, or ours edited by
    hand; uninstall leaves such a file alone."""
    try:
        before = path.read_text(encoding="utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError):
        before = "\0"  # unreadable: not ours
    if action == "install":
        if before is not None and before != content:
            raise InvalidInput(
                f"{path} exists and is not the file ctxkeep writes there; move it away (or remove it if it "
                "is an old ctxkeep file), then run this again (nothing was changed)"
            )
        return FileChange(path, before, content)
    return FileChange(path, before, None if before == content else before)


def vscode_user_dir(env: Mapping[str, str]) -> Path:
    """VS Code's user folder (where its user mcp.json and extensions' globalStorage live), per platform."""
    import sys

    home = Path(env.get("HOME") or Path.home())
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "Code" / "User"
    if sys.platform == "win32":
        return Path(env.get("APPDATA") or home / "AppData" / "Roaming") / "Code" / "User"
    return Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "Code" / "User"


def installed_checks(
    client: str,
    title: str,
    scope: str,
    server: tuple[Path, str] | None,
    hooks: Path | None,
    events: Sequence[str],
    fix: str,
    env: Mapping[str, str] | None = None,
) -> list[Check]:
    """The doctor's lines for one scope of a JSON-configured client: its ctxkeep server (and, given the doctor's
    `env`, where that server keeps its data) and hooks, each command checked, missing hooks named with `fix` (the
    install command); none when nothing of ctxkeep's is there."""
    from ctxkeep.clients.core.checks import json_file

    checks: list[Check] = []
    entry = None
    if server is not None and server[0].exists():
        data = json_file(server[0])
        if data is None:
            return [Check(f"{client} mcp ({scope})", "fail", f"{server[0]} is not a JSON object: {title} ignores it")]
        servers = data.get(server[1])
        entry = servers.get(SERVER_NAME) if isinstance(servers, dict) else None
    hook_data = json_file(hooks) if hooks is not None and hooks.exists() else None
    found = found_hooks(hook_data, client, events) if hook_data else {}
    if entry is None and not found:
        return []
    if isinstance(entry, dict):
        checks.append(resolves(f"{client} server ({scope})", str(entry.get("command", "")), client))
        if env is not None:
            from ctxkeep.clients.core.server_entry import data_check

            checks.append(data_check(f"{client} server data ({scope})", entry, env))
    checks += [resolves(f"{client} {event} hook ({scope})", command, client) for event, command in found.items()]
    missing = [e for e in events if e not in found]
    if hooks is not None and missing:
        checks.append(Check(f"{client} hooks ({scope})", "warn", f"not installed: {', '.join(missing)} ({fix})"))
    return checks


__all__ = [
    "PORTABLE_COMMAND",
    "SERVER_NAME",
    "Edit",
    "Entry",
    "Install",
    "Server",
    "add_hooks",
    "add_server",
    "command_of",
    "found_hooks",
    "hook_command",
    "installed",
    "installed_checks",
    "is_ours",
    "own_file",
    "remove_hooks",
    "remove_server",
    "resolves",
    "uninstalled",
    "vscode_user_dir",
]
