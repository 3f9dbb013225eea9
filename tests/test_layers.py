"""Architecture rules, as named arrows between the rooms of `ctxkeep/`.

Allowed:
- `server` → tools, models, prompts, storage (the thin MCP adapter); only it (and the demo's client) imports the MCP SDK;
- `cli` → tools, clients, models, storage, and `server` only to serve;
- `clients/<client>` → `clients/core`, `clients/table`, tools, models, storage (never `server`, never another client's
  folder);
- `prompts` → models and the capabilities' `__init__` exports;
- `tools/<capability>` → another capability only through its `__init__`, `tools.scope`/`stats`/`users`, `tools.shared`, `tools.redaction`, models,
  storage, shared helpers; never server, cli, clients or prompts;
- `storage` → nothing above it; only storage imports the database drivers or holds SQL, and only `storage/` itself
  names a backend folder such as `storage/sqlite`;
- no import cycles between packages, nor between modules (files).
Each rule is a function over (module name, imports), so the last tests can show a deliberately wrong import fails it.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "ctxkeep"
CAPABILITIES = ("checkpoint", "evidence", "compression", "working_set", "memory", "journal", "compaction_check")
Rule = Callable[[str, set[str]], list[str]]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(source: str, module: str = "ctxkeep") -> set[str]:
    """Every module a source imports, relative imports resolved, `from a import b` also as `a.b` (b may be a module)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: -node.level] if node.level else []
                base = ".".join(anchor + ([base] if base else []))
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def all_modules() -> dict[str, set[str]]:
    return {module_name(p): imports_of(p.read_text(), module_name(p)) for p in sorted(PACKAGE.rglob("*.py"))}


def within(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _capability(name: str) -> str | None:
    parts = name.split(".")
    return parts[2] if len(parts) > 2 and parts[1] == "tools" and parts[2] in CAPABILITIES else None


def capabilities_meet_only_at_their_init(module: str, imports: set[str]) -> list[str]:
    own = _capability(module)
    bad = []
    for name in imports:
        other = _capability(name)
        if other and other != own and len(name.split(".")) > 3 and name.split(".")[3] not in _exports(other):
            bad.append(f"{module} reaches into {name} (import ctxkeep.tools.{other} instead)")
    return bad


def _exports(capability: str) -> set[str]:
    init = PACKAGE / "tools" / capability / "__init__.py"
    return {alias for alias in imports_of(init.read_text()) if "." not in alias} | _exported_names(init)


def _exported_names(init: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(init.read_text())):
        if isinstance(node, ast.ImportFrom):
            names.update(alias.asname or alias.name for alias in node.names)
    return names


def tools_stay_below_the_adapters(module: str, imports: set[str]) -> list[str]:
    if not within(module, "ctxkeep.tools"):
        return []
    above = ("ctxkeep.server", "ctxkeep.cli", "ctxkeep.clients", "ctxkeep.prompts")
    return [f"{module} imports {n}" for n in imports if any(within(n, a) for a in above)]


def storage_imports_nothing_above_it(module: str, imports: set[str]) -> list[str]:
    if not within(module, "ctxkeep.storage"):
        return []
    above = ("ctxkeep.tools", "ctxkeep.server", "ctxkeep.cli", "ctxkeep.clients", "ctxkeep.prompts", "ctxkeep.models")
    return [f"{module} imports {n}" for n in imports if any(within(n, a) for a in above)]


def backends_are_private_to_storage(module: str, imports: set[str]) -> list[str]:
    if within(module, "ctxkeep.storage"):
        return []
    return [
        f"{module} imports the backend {n} (use ctxkeep.storage)"
        for n in imports
        if within(n, "ctxkeep.storage.sqlite") or within(n, "ctxkeep.storage.postgres")
    ]


def clients_never_import_the_server(module: str, imports: set[str]) -> list[str]:
    if not within(module, "ctxkeep.clients"):
        return []
    own = ".".join(module.split(".")[:3])
    bad = [f"{module} imports {n}" for n in imports if within(n, "ctxkeep.server")]
    others = [
        n
        for n in imports
        if within(n, "ctxkeep.clients")
        and len(n.split(".")) > 2
        and (PACKAGE / "clients" / n.split(".")[2]).is_dir()  # a folder; `clients/table.py` is everyone's
        and not within(n, own)
        and not within(n, "ctxkeep.clients.core")
    ]
    return bad + [f"{module} imports another client's folder: {n}" for n in others]


def prompts_use_only_capability_exports(module: str, imports: set[str]) -> list[str]:
    if not within(module, "ctxkeep.prompts"):
        return []
    return capabilities_meet_only_at_their_init(module, imports)


def only_storage_imports_the_database_driver(module: str, imports: set[str]) -> list[str]:
    if within(module, "ctxkeep.storage"):
        return []
    return [f"{module} imports {n}" for n in imports if n.split(".")[0] in ("aiosqlite", "sqlite3", "asyncpg")]


def only_the_server_imports_the_mcp_sdk(module: str, imports: set[str]) -> list[str]:
    mcp = {n for n in imports if n.split(".")[0] == "mcp"}
    if within(module, "ctxkeep.server") or not mcp:
        return []
    if module == "ctxkeep.cli.demo" and all(
        within(n, "mcp") and n in ("mcp", "mcp.Client", "mcp.client.stdio", "mcp.client.stdio.StdioServerParameters")
        for n in mcp
    ):
        return []
    return [f"{module} imports {sorted(mcp)}"]


RULES: list[Rule] = [
    capabilities_meet_only_at_their_init,
    tools_stay_below_the_adapters,
    storage_imports_nothing_above_it,
    backends_are_private_to_storage,
    clients_never_import_the_server,
    prompts_use_only_capability_exports,
    only_storage_imports_the_database_driver,
    only_the_server_imports_the_mcp_sdk,
]


def violations(modules: dict[str, set[str]], rules: Iterable[Rule] = RULES) -> list[str]:
    return sorted(v for rule in rules for module, imports in modules.items() for v in rule(module, imports))


def package_of(module: str) -> str:
    """The room a module belongs to: a capability, a client folder, or a top-level package (storage with its backends)."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "tools" and parts[2] in CAPABILITIES:
        return ".".join(parts[:3])
    if len(parts) > 2 and parts[1] == "clients":
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def package_cycles(modules: dict[str, set[str]]) -> list[list[str]]:
    """Cycles in the graph of rooms (imports inside functions count too: a cycle is a cycle)."""
    graph: dict[str, set[str]] = defaultdict(set)
    known = set(modules)
    for module, imports in modules.items():
        for name in imports:
            if name in known and package_of(name) != package_of(module):
                graph[package_of(module)].add(package_of(name))
    cycles, state = [], {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = "open"
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(path[path.index(nxt) :] + [nxt] if nxt in path else [node, nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    return cycles


def module_imports(path: Path, module: str, known: set[str]) -> set[str]:
    """The modules of `known` that the module at `path` imports (anywhere in it: inside functions too):
    `from a import b` names the module `a.b` when there is one, else `a` (b is a name defined in `a`)."""
    found: set[str] = set()
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            anchor = package[: len(package) - node.level + 1] if node.level else []
            base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                name = f"{base}.{alias.name}"
                found.update([name] if name in known else [base] if base in known else [])
    return found - {module}


def module_graph() -> dict[str, set[str]]:
    paths = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}
    return {module: module_imports(path, module, set(paths)) for module, path in paths.items()}


def module_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a circle (strongly connected components
    of more than one module, Tarjan's algorithm), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while not group or group[-1] != node:
                group.append(stack.pop())
            if len(group) > 1:
                cycles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return cycles


def test_every_module_keeps_the_allowed_arrows() -> None:
    assert violations(all_modules()) == []


def test_there_are_no_import_cycles_between_packages() -> None:
    assert package_cycles(all_modules()) == []


def test_there_are_no_import_cycles_between_modules() -> None:
    assert module_cycles(module_graph()) == []


def test_an_import_cycle_between_two_modules_is_found() -> None:
    graph = module_graph()
    assert "ctxkeep.settings" in graph["ctxkeep.tools.scope"]
    graph["ctxkeep.settings"] = graph["ctxkeep.settings"] | {"ctxkeep.tools.scope"}  # a deliberately circular pair
    assert ["ctxkeep.settings", "ctxkeep.tools.scope"] in module_cycles(graph)
    named = module_imports(PACKAGE / "clients" / "core" / "events.py", "ctxkeep.clients.core.events", set(graph))
    assert "ctxkeep.clients.core.live" in named and "ctxkeep.clients.core" not in named  # the module, not its package


def test_sql_keywords_appear_only_in_storage() -> None:
    for path in PACKAGE.rglob("*.py"):
        if "storage" in path.relative_to(PACKAGE).parts:
            continue
        text = path.read_text()
        assert "SELECT " not in text and "INSERT INTO" not in text, path


def test_every_package_says_what_its_room_is_for() -> None:
    for init in PACKAGE.rglob("__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and 1 <= len(doc.splitlines()) <= 8, init


def test_a_deliberately_wrong_import_fails_each_rule() -> None:
    wrong = {
        "ctxkeep.tools.working_set.assemble": "from ctxkeep.tools.evidence.records import _redacted",
        "ctxkeep.tools.memory.records": "from ctxkeep.server.app import build_server",
        "ctxkeep.storage.sqlite.db": "from ctxkeep.tools.scope import Scope",
        "ctxkeep.tools.checkpoint.versions": "from ctxkeep.storage.sqlite.db import SqliteTx",
        "ctxkeep.clients.claude_code.install": "from ctxkeep.server.common import reply",
        "ctxkeep.prompts.handoff": "from ctxkeep.tools.checkpoint.brief import _lines",
        "ctxkeep.tools.evidence.search": "import aiosqlite",
        "ctxkeep.clients.core.ingest": "from mcp import types",
    }
    for rule, (module, line) in zip(RULES, wrong.items(), strict=True):
        assert rule(module, imports_of(line, module)), f"{rule.__name__} let `{line}` in {module} pass"


def test_an_import_cycle_between_rooms_is_found() -> None:
    modules = all_modules()
    modules["ctxkeep.tools.evidence.records"] = modules["ctxkeep.tools.evidence.records"] | {
        "ctxkeep.tools.working_set"
    }
    assert any(
        "ctxkeep.tools.evidence" in cycle and "ctxkeep.tools.working_set" in cycle for cycle in package_cycles(modules)
    )
