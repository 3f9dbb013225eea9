"""The package keeps what pyproject.toml promises: every import is a declared dependency, PostgreSQL's driver is an
extra, the oldest Python it claims is the one it is type-checked for, one version, a license, pinned tools."""

from __future__ import annotations

import ast
import importlib.metadata
import re
import subprocess
import sys
from pathlib import Path

import ctxkeep

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
PROJECT = PYPROJECT["project"]


def _name(requirement: str) -> str:
    """The distribution a requirement names, normalized (PEP 503)."""
    found = re.match(r"[A-Za-z0-9._-]+", requirement)
    assert found, requirement
    return re.sub(r"[-_.]+", "-", found.group(0)).lower()


def _imported_top_levels() -> set[str]:
    names: set[str] = set()
    for path in (ROOT / "ctxkeep").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names.add(node.module.split(".")[0])
    # tomllib and tomli: the standard library's TOML reader (3.11+) and its declared stand-in on 3.10
    return {n for n in names if n not in ("ctxkeep", "tomllib", "tomli") and n not in sys.stdlib_module_names}


def _providers() -> dict[str, list[str]]:
    """Top-level module -> the installed distributions that provide it, from their file lists (Python 3.10's
    packages_distributions reads only top_level.txt, which newer build backends no longer write)."""
    found: dict[str, list[str]] = {}
    for dist in importlib.metadata.distributions():
        for file in dist.files or []:
            top = file.parts[0]
            if top.endswith((".dist-info", ".data", ".pth")) or top in ("..", "__pycache__"):
                continue
            module = top.split(".")[0] if len(file.parts) == 1 else top  # a module file: name.py, name.cpython-…so
            if module.isidentifier() and dist.metadata["Name"] not in found.get(module, []):
                found.setdefault(module, []).append(dist.metadata["Name"])
    return found


def test_every_third_party_module_ctxkeep_imports_is_a_declared_dependency() -> None:
    declared = {_name(r) for r in PROJECT["dependencies"]} | {
        _name(r) for r in PROJECT["optional-dependencies"]["postgres"]
    }
    providers = _providers()
    missing = {
        module: sorted(providers.get(module, ["(not installed)"]))
        for module in _imported_top_levels()
        if not {_name(d) for d in providers.get(module, [])} & declared
    }
    assert missing == {}, f"imported but not declared in [project.dependencies]: {missing}"


def test_a_stored_time_reads_back_on_the_oldest_python() -> None:
    from datetime import datetime, timezone

    from ctxkeep.text import utc_moment, utc_text

    moment = datetime(2026, 12, 1, 8, 30, 5, 123456, tzinfo=timezone.utc)
    stored = utc_text(moment)
    assert stored == "2026-12-01T08:30:05.123456Z" and utc_moment(stored) == moment  # fromisoformat on 3.10 refuses Z
    assert utc_moment("2026-12-01T09:30:05+01:00") == moment.replace(microsecond=0)


def test_postgresql_is_an_extra_and_the_test_extra_has_it() -> None:
    assert "asyncpg" not in {_name(r) for r in PROJECT["dependencies"]}
    assert {_name(r) for r in PROJECT["optional-dependencies"]["postgres"]} == {"asyncpg"}
    assert "ctxkeep[postgres]" in PROJECT["optional-dependencies"]["test"]


def test_the_oldest_python_claimed_is_the_one_type_checked_and_its_toml_reader_is_declared() -> None:
    assert PROJECT["requires-python"] == ">=3.10"
    assert PYPROJECT["tool"]["mypy"]["python_version"] == "3.10"
    assert 'tomli>=2; python_version < "3.11"' in PROJECT["dependencies"]


def test_the_version_is_written_once() -> None:
    assert "version" not in PROJECT and PROJECT["dynamic"] == ["version"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "ctxkeep.__version__"}
    assert importlib.metadata.version("ctxkeep") == ctxkeep.__version__


def test_the_license_file_is_the_license_pyproject_names() -> None:
    text = (ROOT / "LICENSE").read_text()
    assert text.startswith("MIT License") and "Copyright (c)" in text and "the ctxkeep authors" in text
    assert PROJECT["license"] == "MIT" and PROJECT["license-files"] == ["LICENSE"]


def test_the_type_checker_and_the_linter_are_pinned_for_the_test_run() -> None:
    pins = {_name(r): r for r in PROJECT["optional-dependencies"]["test"]}
    for tool in ("mypy", "ruff"):
        assert re.fullmatch(rf"{tool}==\d+\.\d+\.\d+", pins[tool]), pins[tool]
        assert importlib.metadata.version(tool) == pins[tool].split("==")[1]


def test_a_postgresql_url_without_asyncpg_names_the_extra_to_install(tmp_path: Path) -> None:
    probe = (
        "import sys\nsys.modules['asyncpg'] = None\n"  # as if ctxkeep were installed without the postgres extra
        "from ctxkeep.cli import main\nsys.exit(main(['tasks']))\n"
    )
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "CTXKEEP_DB": "postgresql://u:secret@127.0.0.1:1/db"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "pip install 'ctxkeep[postgres]'" in done.stderr and "secret" not in done.stderr
    assert "Traceback" not in done.stderr
