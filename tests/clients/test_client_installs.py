"""`ctxkeep install|uninstall <client>` for Codex, Gemini, Cursor, VS Code, Windsurf and Cline: the files written in
each client's documented format, everything else kept, idempotent, refused when invalid or when another server is
named ctxkeep, removed byte for byte; the doctor's checks of what the client itself must still allow.

Codex and Gemini are also run for real in tests/e2e/test_client_installs.py; the other four have no CLI here, so their
files are checked against the documents cited at each test.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

from ctxkeep.cli import clients
from ctxkeep.clients.core.config_files import apply
from ctxkeep.clients.table import BY_NAME
from ctxkeep.errors import InvalidInput

EXE = "/opt/ctx keep/bin/ctxkeep"  # a space in the path: commands must quote it
QUOTED = "'/opt/ctx keep/bin/ctxkeep'"
CLIENTS = ["codex", "gemini", "cursor", "vscode", "windsurf", "cline"]


class Home:
    def __init__(self, tmp: Path) -> None:
        self.home, self.project = tmp / "home", tmp / "project"
        self.home.mkdir()
        self.project.mkdir()
        self.env = {"HOME": str(self.home), "XDG_CONFIG_HOME": str(self.home / ".config")}

    def run(self, action: str, client: str, scope: str | None = None, executable: str = EXE) -> list[Any]:
        installer = clients.module(client, "install")
        changes = installer.plan(action, scope or BY_NAME[client].scopes[0], self.project, self.env, executable)
        apply(changes, backup=action == "install")
        if hasattr(installer, "finish"):
            installer.finish(changes)
        return list(changes)

    def files(self) -> dict[str, bytes]:
        return {
            str(p.relative_to(p.parents[len(p.parents) - 1])): p.read_bytes()
            for root in (self.home, self.project)
            for p in sorted(root.rglob("*"))
            if p.is_file() and ".ctxkeep.bak" not in p.name
        }


def _json(path: Path) -> Any:
    return json.loads(path.read_text())


def _write(path: Path, data: Any, indent: int = 4) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=indent) + "\n" if not isinstance(data, str) else data)
    return path.read_bytes()


# The formats, per client documentation.


def test_codex_writes_its_documented_toml_table_and_hook_groups(tmp_path: Path) -> None:
    """developers.openai.com/codex/config-reference (`[mcp_servers.<name>]` command, args, default_tools_approval_mode,
    required) and
    developers.openai.com/codex/hooks (hooks.json: event → [{matcher?, hooks: [{type, command, timeout}]}]; SessionStart's
    additionalContextLimit as the app-server schema describes it); verified with Codex CLI 0.171 in tests/e2e."""
    home = Home(tmp_path)
    home.run("install", "codex")
    config = tomllib.loads((home.home / ".codex" / "config.toml").read_text())
    assert config["mcp_servers"]["ctxkeep"] == {
        "command": EXE,
        "args": ["serve"],
        "default_tools_approval_mode": "approve",
        "required": True,
    }
    hooks = _json(home.home / ".codex" / "hooks.json")["hooks"]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop", "PreCompact"}
    assert hooks["SessionStart"] == [  # every source: a new session (startup) gets the startup brief
        {
            "hooks": [
                {
                    "type": "command",
                    "command": f"{QUOTED} hook codex SessionStart",
                    "timeout": 30,
                    "additionalContextLimit": 4000,
                }
            ],
        }
    ]
    assert hooks["Stop"] == [{"hooks": [{"type": "command", "command": f"{QUOTED} hook codex Stop", "timeout": 30}]}]


def test_a_codex_reinstall_takes_the_session_start_group_an_earlier_version_wrote_and_uninstall_restores_the_bytes(
    tmp_path: Path,
) -> None:
    """Versions before the startup brief matched SessionStart on `resume|compact`: a reinstall replaces that group
    (one SessionStart hook, not two), and uninstall still finds it and gives back the original file."""
    home = Home(tmp_path)
    hooks = home.home / ".codex" / "hooks.json"
    mine = {"hooks": [{"type": "command", "command": "echo mine"}]}
    original = _write(hooks, {"hooks": {"SessionStart": [mine]}})
    earlier = {
        "matcher": "resume|compact",
        "hooks": [
            {
                "type": "command",
                "command": f"{QUOTED} hook codex SessionStart",
                "timeout": 30,
                "additionalContextLimit": 4000,
            }
        ],
    }
    hooks.with_name("hooks.json.ctxkeep.bak").write_bytes(original)  # what the earlier install kept
    _write(hooks, {"hooks": {"SessionStart": [mine, earlier]}})
    home.run("install", "codex")
    groups = _json(hooks)["hooks"]["SessionStart"]
    assert len(groups) == 2 and groups[0] == mine and "matcher" not in groups[1]
    home.run("uninstall", "codex")
    assert hooks.read_bytes() == original and not hooks.with_name("hooks.json.ctxkeep.bak").exists()
    _write(hooks, {"hooks": {"SessionStart": [earlier]}})  # an earlier install, uninstalled by this version
    home.run("uninstall", "codex")
    assert not hooks.exists() or "SessionStart" not in _json(hooks).get("hooks", {})


def test_codex_project_scope_writes_only_committable_files_under_dot_codex(tmp_path: Path) -> None:
    home = Home(tmp_path)
    home.run("install", "codex", "project")
    text = (home.project / ".codex" / "config.toml").read_text() + (home.project / ".codex" / "hooks.json").read_text()
    assert '"ctxkeep hook codex Stop"' in text and 'command = "ctxkeep"' in text and EXE not in text
    assert not (home.home / ".codex").exists()


def test_gemini_writes_its_documented_server_and_hook_groups(tmp_path: Path) -> None:
    """geminicli.com/docs/tools/mcp-server (`mcpServers.<name>`: command, args, trust) and geminicli.com/docs/hooks/reference
    (`hooks.<Event>`: [{matcher?, hooks: [{name, type: "command", command, timeout (ms)}]}]); verified with Gemini CLI 0.61."""
    home = Home(tmp_path)
    home.run("install", "gemini")
    settings = _json(home.home / ".gemini" / "settings.json")
    assert settings["mcpServers"] == {"ctxkeep": {"command": EXE, "args": ["serve"], "trust": True}}
    assert settings["hooks"]["AfterTool"] == [
        {
            "matcher": "*",
            "hooks": [
                {
                    "name": "ctxkeep-AfterTool",
                    "type": "command",
                    "command": f"{QUOTED} hook gemini AfterTool",
                    "timeout": 30000,
                }
            ],
        }
    ]
    assert set(settings["hooks"]) == {"SessionStart", "BeforeAgent", "AfterTool", "AfterAgent", "SessionEnd"}


def test_cursor_writes_its_documented_mcp_json_and_version_1_hooks(tmp_path: Path) -> None:
    """cursor.com/docs/mcp (`.cursor/mcp.json`: {"mcpServers": {name: {command, args}}}) and cursor.com/docs/agent/hooks
    (`.cursor/hooks.json`: {"version": 1, "hooks": {event: [{command}]}}, events sessionStart, beforeSubmitPrompt,
    afterShellExecution, afterMCPExecution, afterFileEdit, stop)."""
    home = Home(tmp_path)
    home.run("install", "cursor")
    assert _json(home.project / ".cursor" / "mcp.json") == {
        "mcpServers": {"ctxkeep": {"command": "ctxkeep", "args": ["serve"]}}
    }
    hooks = _json(home.project / ".cursor" / "hooks.json")
    assert hooks["version"] == 1 and hooks["hooks"]["stop"] == [{"command": "ctxkeep hook cursor stop"}]
    assert set(hooks["hooks"]) == {
        "sessionStart",
        "beforeSubmitPrompt",
        "afterShellExecution",
        "afterMCPExecution",
        "afterFileEdit",
        "stop",
    }
    home.run("install", "cursor", "user")
    assert _json(home.home / ".cursor" / "hooks.json")["hooks"]["sessionStart"] == [
        {"command": f"{QUOTED} hook cursor sessionStart"}
    ]


def test_vscode_writes_its_documented_servers_and_a_hooks_file_of_its_own(tmp_path: Path) -> None:
    """code.visualstudio.com/docs/copilot/reference/mcp-configuration (`.vscode/mcp.json`: {"servers": {name: {type:
    "stdio", command, args}}}) and code.visualstudio.com/docs/copilot/customization/hooks (`.github/hooks/*.json`:
    {"hooks": {Event: [{type: "command", command, timeout (s)}]}})."""
    home = Home(tmp_path)
    home.run("install", "vscode")
    assert _json(home.project / ".vscode" / "mcp.json") == {
        "servers": {"ctxkeep": {"type": "stdio", "command": "ctxkeep", "args": ["serve"]}}
    }
    hooks = _json(home.project / ".github" / "hooks" / "ctxkeep.json")["hooks"]
    assert hooks["Stop"] == [{"type": "command", "command": "ctxkeep hook vscode Stop", "timeout": 30}]
    assert set(hooks) == {"SessionStart", "UserPromptSubmit", "PostToolUse", "Stop"}
    home.run("install", "vscode", "user")
    assert (home.home / ".config" / "Code" / "User" / "mcp.json").exists() and (
        home.home / ".copilot" / "hooks" / "ctxkeep.json"
    ).exists()


def test_windsurf_writes_its_documented_mcp_config_hooks_and_an_always_on_rules_file(tmp_path: Path) -> None:
    """docs.windsurf.com/windsurf/cascade/mcp (`~/.codeium/windsurf/mcp_config.json`: {"mcpServers": {name: {command,
    args}}}), docs.windsurf.com/windsurf/cascade/hooks (hooks.json: {"hooks": {event: [{command, show_output}]}}, user
    `~/.codeium/windsurf/hooks.json`, workspace `.windsurf/hooks.json`) and /cascade/memories (`.windsurf/rules/*.md`
    with `trigger: always_on` frontmatter)."""
    home = Home(tmp_path)
    home.run("install", "windsurf")
    base = home.home / ".codeium" / "windsurf"
    assert _json(base / "mcp_config.json") == {"mcpServers": {"ctxkeep": {"command": EXE, "args": ["serve"]}}}
    assert _json(base / "hooks.json")["hooks"]["pre_user_prompt"] == [
        {"command": f"{QUOTED} hook windsurf pre_user_prompt", "show_output": False}
    ]
    home.run("install", "windsurf", "project")
    rules = (home.project / ".windsurf" / "rules" / "ctxkeep.md").read_text()
    assert rules.startswith("---\ntrigger: always_on\n---\n") and len(rules) < 6_000 and "checkpoint_load" in rules
    assert (
        _json(home.project / ".windsurf" / "hooks.json")["hooks"]["post_write_code"][0]["command"]
        == "ctxkeep hook windsurf post_write_code"
    )


def test_cline_writes_executable_hooks_named_after_their_events_and_its_mcp_settings(tmp_path: Path) -> None:
    """docs.cline.bot/customization/hooks (a hook is an executable file named after its event, no extension, in
    `.clinerules/hooks/` or `~/Documents/Cline/Hooks/`) and docs.cline.bot/mcp/configuring-mcp-servers
    (`cline_mcp_settings.json`: {"mcpServers": {name: {command, args, disabled}}})."""
    home = Home(tmp_path)
    home.run("install", "cline")
    folder = home.project / ".clinerules" / "hooks"
    assert sorted(p.name for p in folder.iterdir()) == ["PostToolUse", "TaskResume", "TaskStart", "UserPromptSubmit"]
    script = (folder / "TaskResume").read_text()
    assert script.startswith("#!/bin/sh\n") and script.endswith("exec ctxkeep hook cline TaskResume\n")
    assert stat.S_IMODE((folder / "TaskResume").stat().st_mode) & 0o111
    settings = (
        home.home
        / ".config"
        / "Code"
        / "User"
        / "globalStorage"
        / "saoudrizwan.claude-dev"
        / "settings"
        / "cline_mcp_settings.json"
    )
    assert _json(settings) == {"mcpServers": {"ctxkeep": {"command": EXE, "args": ["serve"], "disabled": False}}}
    done = subprocess.run(["sh", "-n", str(folder / "TaskStart")], capture_output=True)  # valid shell
    assert done.returncode == 0


# Everything else kept, idempotent, byte-exact uninstall.


EXISTING: dict[str, list[tuple[str, Any]]] = {
    "codex": [
        (".codex/config.toml", 'model = "gpt-5"\n\n[mcp_servers.github]\ncommand = "gh-mcp"\n'),
        (".codex/hooks.json", {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "echo mine"}]}]}}),
    ],
    "gemini": [
        (
            ".gemini/settings.json",
            {
                "model": {"name": "gemini-2.5-pro"},
                "mcpServers": {"gh": {"command": "gh-mcp"}},
                "hooks": {"AfterTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "fmt"}]}]},
            },
        )
    ],
    "cursor": [
        ("@.cursor/mcp.json", {"mcpServers": {"gh": {"command": "gh-mcp"}}}),
        ("@.cursor/hooks.json", {"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}]}}),
    ],
    "vscode": [("@.vscode/mcp.json", {"inputs": [], "servers": {"gh": {"type": "stdio", "command": "gh-mcp"}}})],
    "windsurf": [
        (".codeium/windsurf/mcp_config.json", {"mcpServers": {"gh": {"command": "gh-mcp", "disabled": True}}}),
        (".codeium/windsurf/hooks.json", {"hooks": {"post_write_code": [{"command": "fmt", "show_output": True}]}}),
    ],
    "cline": [
        (
            ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
            {"mcpServers": {"gh": {"command": "gh-mcp", "autoApprove": []}}},
        )
    ],
}


def _seed(home: Home, client: str) -> dict[Path, bytes]:
    written = {}
    for name, data in EXISTING[client]:
        path = home.project / name[1:] if name.startswith("@") else home.home / name
        written[path] = _write(path, data, indent=3)
    return written


@pytest.mark.parametrize("client", CLIENTS)
def test_install_keeps_everything_else_is_idempotent_and_uninstall_restores_the_bytes(
    tmp_path: Path, client: str
) -> None:
    home = Home(tmp_path)
    original = _seed(home, client)
    before = home.files()
    home.run("install", client)
    installed = home.files()
    assert installed != before
    for path in original:
        text = path.read_text()
        assert "gh-mcp" in text or "echo mine" in text or "fmt" in text or "format.sh" in text  # theirs kept
        assert (path.with_name(path.name + ".ctxkeep.bak")).read_bytes() == original[path]
    again = home.run("install", client)
    assert not any(change.changed for change in again) and home.files() == installed
    home.run("uninstall", client)
    assert home.files() == before


@pytest.mark.parametrize("client", CLIENTS)
def test_a_reinstall_from_another_path_replaces_the_old_commands(tmp_path: Path, client: str) -> None:
    home = Home(tmp_path)
    home.run("install", client, "user", executable="/old/venv/bin/ctxkeep")
    home.run("install", client, "user")
    everything = b"".join(home.files().values()).decode()
    assert "/old/venv" not in everything and EXE in everything
    home.run("uninstall", client, "user")
    assert home.files() == {}


@pytest.mark.parametrize("client", CLIENTS)
def test_after_a_reinstall_from_another_path_uninstall_still_restores_the_original_bytes(
    tmp_path: Path, client: str
) -> None:
    home = Home(tmp_path)
    _seed(home, client)
    before = home.files()
    home.run("install", client, executable="/old/venv/bin/ctxkeep")
    home.run("install", client)  # the backup of the original must survive this
    home.run("uninstall", client)
    assert home.files() == before


@pytest.mark.parametrize("client", CLIENTS)
def test_a_config_that_is_not_valid_is_refused_and_left_untouched(tmp_path: Path, client: str) -> None:
    home = Home(tmp_path)
    seeded = _seed(home, client)
    target = next(iter(seeded))
    target.write_text("{ this is not: valid ]\n" if target.suffix == ".json" else "model = [unclosed\n")
    before = home.files()
    with pytest.raises(InvalidInput, match="not valid|does not hold"):
        home.run("install", client)
    assert home.files() == before


@pytest.mark.parametrize("client", CLIENTS)
def test_another_server_named_ctxkeep_is_never_overwritten(tmp_path: Path, client: str) -> None:
    home = Home(tmp_path)
    seeded = _seed(home, client)
    target = next(iter(seeded))
    if target.suffix == ".toml":
        target.write_text(target.read_text() + '\n[mcp_servers.ctxkeep]\ncommand = "/usr/bin/other-ctxkeep"\n')
    else:
        data = _json(target)
        data["mcpServers" if client != "vscode" else "servers"]["ctxkeep"] = {
            "command": "npx",
            "args": ["some-other-ctxkeep"],
        }
        target.write_text(json.dumps(data))
    before = home.files()
    with pytest.raises(InvalidInput, match="ctxkeep install did not write"):
        home.run("install", client)
    assert home.files() == before
    home.run("uninstall", client)  # and uninstall leaves it alone too
    assert home.files() == before


def test_a_hook_script_of_cline_that_someone_else_wrote_is_refused(tmp_path: Path) -> None:
    home = Home(tmp_path)
    mine = _write(home.project / ".clinerules" / "hooks" / "TaskStart", "#!/bin/sh\necho mine\n")
    with pytest.raises(InvalidInput, match="is not the file ctxkeep writes"):
        home.run("install", "cline")
    assert (home.project / ".clinerules" / "hooks" / "TaskStart").read_bytes() == mine
    assert not (home.project / ".clinerules" / "hooks" / "TaskResume").exists()


def test_a_codex_block_edited_by_hand_is_refused(tmp_path: Path) -> None:
    home = Home(tmp_path)
    home.run("install", "codex")
    config = home.home / ".codex" / "config.toml"
    config.write_text(config.read_text().replace('args = ["serve"]', 'args = ["serve", "--http"]'))
    edited = config.read_bytes()
    with pytest.raises(InvalidInput, match="edited by hand"):
        home.run("install", "codex")
    assert config.read_bytes() == edited


def test_the_command_line_lists_every_client_and_a_dry_run_writes_nothing(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "CTXKEEP_PROJECT": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path / ".config"),
    }
    listed = subprocess.run(
        [sys.executable, "-m", "ctxkeep", "install", "--list"], capture_output=True, text=True, env=env, timeout=60
    )
    assert listed.returncode == 0 and all(f"ctxkeep install {c}" in listed.stdout for c in ["claude-code", *CLIENTS])
    for client in CLIENTS:
        done = subprocess.run(
            [sys.executable, "-m", "ctxkeep", "install", client, "--dry-run"],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )
        assert done.returncode == 0 and "+++" in done.stdout, done.stderr
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    wrong = subprocess.run(
        [sys.executable, "-m", "ctxkeep", "install", "windsurf", "--scope", "local"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert wrong.returncode == 1 and "windsurf has no 'local' scope" in wrong.stderr


# What the client itself must still allow, and the exact step.


def test_doctor_says_codex_hooks_and_the_project_are_not_trusted_yet_and_how_to_trust_them(tmp_path: Path) -> None:
    from ctxkeep.clients.codex.doctor import checks

    home = Home(tmp_path)
    home.run("install", "codex", "project")
    found = {c.name: c for c in checks(home.project, home.env)}
    assert (
        found["codex hook trust (project)"].status == "warn" and "/hooks" in found["codex hook trust (project)"].detail
    )
    assert "codex exec --trust" in found["codex project trust"].detail
    hooks = home.project / ".codex" / "hooks.json"
    state = "".join(
        f'[hooks.state."{hooks}:{event}:0:0"]\ntrusted_hash = "sha256:x"\n'
        for event in ("session_start", "user_prompt_submit", "post_tool_use", "stop", "pre_compact")
    )
    _write(home.home / ".codex" / "config.toml", f'[projects."{home.project}"]\ntrust_level = "trusted"\n\n{state}')
    found = {c.name: c for c in checks(home.project, home.env)}
    assert "codex hook trust (project)" not in found and "codex project trust" not in found


def test_doctor_says_gemini_does_not_trust_the_folder_yet_and_how_to_trust_it(tmp_path: Path) -> None:
    from ctxkeep.clients.gemini.doctor import checks

    home = Home(tmp_path)
    home.run("install", "gemini")
    trust = {c.name: c for c in checks(home.project, home.env)}["gemini folder trust"]
    assert trust.status == "warn" and "exits with code 55" in trust.detail and "TRUST_FOLDER" in trust.detail
    _write(home.home / ".gemini" / "trustedFolders.json", {str(home.project.parent): "TRUST_FOLDER"})
    assert {c.name: c for c in checks(home.project, home.env)}["gemini folder trust"].status == "ok"
    _write(
        home.home / ".gemini" / "trustedFolders.json",
        {str(home.project.parent): "TRUST_FOLDER", str(home.project): "DO_NOT_TRUST"},
    )
    assert {c.name: c for c in checks(home.project, home.env)}["gemini folder trust"].status == "warn"


@pytest.mark.parametrize("client", CLIENTS)
def test_doctor_checks_each_installed_client_and_says_nothing_of_the_others(tmp_path: Path, client: str) -> None:
    home = Home(tmp_path)
    assert clients.doctor_checks(home.project, home.env) == []  # Claude Code too: it is not installed here
    home.run("install", client, "user")  # EXE does not exist here: every command it wrote is reported
    found = clients.doctor_checks(home.project, home.env)
    assert found and all(c.name.startswith(client) for c in found), found
    broken = [c for c in found if c.status == "fail"]
    assert broken and all(
        "missing or not executable" in c.detail and f"ctxkeep install {client}" in c.detail for c in broken
    )


@pytest.mark.parametrize("scope", ["user", "project"])
def test_uninstall_codex_removes_only_its_own_lines_and_keeps_comments_added_since(tmp_path: Path, scope: str) -> None:
    """Issue 24 item 19: comments (which parsed TOML does not see) and settings added after install survive uninstall
    byte for byte; only ctxkeep's block goes."""
    home = Home(tmp_path)
    folder = home.home / ".codex" if scope == "user" else home.project / ".codex"
    config = folder / "config.toml"
    original = '# my settings\nmodel = "gpt-5"  # the fast one\n\n[mcp_servers.github]\ncommand = "gh-mcp"\n'
    _write(config, original)
    home.run("install", "codex", scope)
    installed = config.read_text()
    comment_only = installed.replace('model = "gpt-5"', '# chosen by the team lead\nmodel = "gpt-5"')
    config.write_text(comment_only)
    home.run("uninstall", "codex", scope)
    assert config.read_text() == original.replace('model = "gpt-5"', '# chosen by the team lead\nmodel = "gpt-5"')
    assert (folder / "config.toml.ctxkeep.bak").exists()  # the file changed since install: its backup is kept
    config.write_text(original)
    (folder / "config.toml.ctxkeep.bak").unlink()
    home.run("install", "codex", scope)
    config.write_text(config.read_text() + '\n# added after ctxkeep\n[profiles.deep]\nmodel = "o3"\n')
    home.run("uninstall", "codex", scope)
    assert config.read_text() == original + '\n# added after ctxkeep\n[profiles.deep]\nmodel = "o3"\n'
    home.run("install", "codex", scope)
    home.run("uninstall", "codex", scope)  # nothing changed since install: the original bytes, the backup gone
    assert config.read_text() == original + '\n# added after ctxkeep\n[profiles.deep]\nmodel = "o3"\n'
    assert not (folder / "config.toml.ctxkeep.bak").exists()
