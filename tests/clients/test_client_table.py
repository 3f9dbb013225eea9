"""The table of clients (`ctxkeep.clients.table`) is the one list the CLI's client names, install scopes, `--scope`
help, `install --list`, the doctor and the hook dispatch come from: a client is its folder plus its row."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path
from typing import get_args

import pytest

from ctxkeep.cli import clients
from ctxkeep.cli.main import build_parser
from ctxkeep.clients.table import BY_NAME, CLAUDE_CODE_EVENTS, CLIENTS, scope_help
from tests.paths import TESTS

PACKAGE = TESTS.parent / "ctxkeep" / "clients"


def test_every_client_folder_has_a_row_and_every_row_a_folder() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()} - {"core"}
    assert folders == {client.folder for client in CLIENTS}


def test_every_row_names_the_modules_the_cli_calls() -> None:
    for client in CLIENTS:
        assert callable(import_module(client.module("hooks")).run), client.name
        assert callable(import_module(client.module("doctor")).checks), client.name
        install = import_module(client.module("install"))
        assert set(install.LISTING) >= {"files", "events"}, client.name
        assert callable(getattr(install, "run", None)) or (callable(install.plan) and callable(install.notes))
        assert set(get_args(install.Scope)) == set(client.scopes), client.name  # the type says what the row says


def test_claude_codes_short_hook_commands_are_its_events() -> None:
    from ctxkeep.clients.claude_code.hooks import HANDLERS
    from ctxkeep.clients.claude_code.install import HOOKS

    assert set(CLAUDE_CODE_EVENTS) == set(HANDLERS) == {hook for hook, _ in HOOKS.values()}


def test_the_cli_offers_each_client_with_its_scopes_and_says_so_in_help() -> None:
    parser = build_parser()
    for client in CLIENTS:
        for scope in client.scopes:
            args = parser.parse_args(["install", client.name, "--scope", scope])
            assert (args.client, args.scope) == (client.name, scope)
    with pytest.raises(SystemExit):
        parser.parse_args(["install", "notepad"])
    help_text = scope_help()
    assert all(client.name in help_text for client in CLIENTS)
    assert "codex, gemini, windsurf: user (default) or project" in help_text
    listed = "\n".join(clients.listing())
    assert all(f"ctxkeep install {c.name} [--scope {'|'.join(c.scopes)}]" in listed for c in CLIENTS)


def test_an_unknown_scope_is_refused_with_the_clients_own() -> None:
    from ctxkeep.errors import InvalidInput

    with pytest.raises(InvalidInput, match="cursor has no 'local' scope; use one of: project, user"):
        clients.run("install", "cursor", "local", Path("/nowhere"), {}, dry_run=True)
    assert BY_NAME["claude-code"].scopes[0] == "local"
