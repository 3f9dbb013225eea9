"""Architecture rules: server -> tools -> storage; SQL only in storage; MCP only in server (and the demo client)."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ctxkeep"


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


def modules(folder: str = "") -> list[Path]:
    return sorted((PACKAGE / folder).rglob("*.py"))


def test_only_storage_imports_the_database_driver() -> None:
    offenders = [p for p in modules() if "storage" not in p.parts and {"aiosqlite", "sqlite3"} & imports_of(p)]
    assert offenders == []


def test_only_server_imports_the_mcp_sdk_and_the_demo_only_its_client() -> None:
    offenders = []
    for path in modules():
        mcp = {name for name in imports_of(path) if name == "mcp" or name.startswith("mcp.")}
        if "server" in path.relative_to(PACKAGE).parts:
            continue
        if path.name == "demo.py" and all(name in ("mcp", "mcp.client.stdio") for name in mcp):
            continue
        if mcp:
            offenders.append(path)
    assert offenders == []


def test_tools_and_storage_never_import_the_server_or_cli() -> None:
    for folder in ("tools", "storage"):
        for path in modules(folder):
            bad = {n for n in imports_of(path) if n.startswith(("ctxkeep.server", "ctxkeep.cli", "ctxkeep.cli.demo"))}
            assert not bad, f"{path} imports {bad}"


def test_storage_never_imports_tools() -> None:
    for path in modules("storage"):
        assert not {n for n in imports_of(path) if n.startswith("ctxkeep.tools")}, path


def test_sql_keywords_appear_only_in_storage() -> None:
    for path in modules():
        if "storage" in path.parts:
            continue
        text = path.read_text()
        assert "SELECT " not in text and "INSERT INTO" not in text, path
