"""Shared fixtures: the database every storage test runs on twice (a real SQLite file in a temp dir, then a fresh
schema of a real PostgreSQL server: tests/pg.py), the in-memory MCP client, stdio server params.

`db_path` is the database's location, a Path or a postgresql:// URL: open_store, Settings and CTXKEEP_DB take either.
A test that reads the SQLite file itself (its bytes, its tables through sqlite3) runs on SQLite only: SQLITE_ONLY
names it and why; the PostgreSQL side of that guarantee has its own test.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ctxkeep.server import build_server
from ctxkeep.settings import Settings
from ctxkeep.storage import Store, open_store
from ctxkeep.tools.scope import Scope
from tests.pg import fresh_schema

PROJECT = "/projects/alpha"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


BACKENDS = ("sqlite", "postgres")
# test files (or file::test) whose PostgreSQL run is left out, and why (and where PostgreSQL's side is tested)
_FILE = "reads or changes the SQLite file itself"
SQLITE_ONLY = {
    "test_storage_guard.py": "the file's guards: deleted, replaced, read-only, foreign, full, modes",
    "test_index_privacy.py": f"{_FILE}: FTS5 segments (test_postgres_store.py: keyed postings)",
    "test_forget_owed.py": f"{_FILE}: a WAL reader (test_postgres_forget.py: a table lock holder)",
    "test_evidence_delete.py": f"{_FILE}: bytes (test_postgres_forget.py: the relation files)",
    "test_memory_stdio.py::test_forget_removes_the_text_from_every_place_and_every_byte": f"{_FILE}: bytes (test_postgres_forget.py)",
    "test_storage.py::test_the_file_and_its_wal_are_private": _FILE,
    "test_storage.py::test_pragmas_are_set": _FILE,
    "test_storage.py::test_a_newer_schema_is_refused": f"{_FILE} (test_postgres_store.py)",
    "test_storage.py::test_stored_versions_cannot_be_updated": f"{_FILE} (test_postgres_store.py)",
    "test_storage.py::test_the_hash_chain_exposes_tampering": f"{_FILE} (test_postgres_store.py)",
    "test_storage.py::test_a_failed_write_rolls_back_whole": f"{_FILE} (test_postgres_store.py)",
    "test_storage.py::test_a_full_disk_is_a_clear_error_and_the_next_write_works": f"{_FILE}: max_page_count",
    "test_storage.py::test_a_cancelled_transaction_rolls_back_and_frees_the_file": f"{_FILE} (test_postgres_store.py)",
    "test_storage.py::test_a_lock_held_past_busy_timeout_is_a_clear_error_and_the_next_call_works": f"{_FILE} (test_postgres_store.py)",
}
# and the other way round: what only a PostgreSQL URL has
POSTGRES_ONLY = {
    "test_users_http.py::test_the_postgres_url_password_never_reaches_the_servers_log": "a URL's password: SQLite has none",
}


@pytest.fixture(params=BACKENDS)
def db_path(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Path]:
    """The test's database: an SQLite file, or (typed as a Path for the tests' sake) a PostgreSQL URL of its own."""
    if request.param == "sqlite":
        yield tmp_path / "ctxkeep.db"
        return
    with fresh_schema() as url:
        yield url  # type: ignore[misc]


def _named_in(nodeid: str, names: dict[str, str]) -> bool:
    path, _, rest = nodeid.partition("::")
    name = path.rsplit("/", 1)[-1]
    return name in names or f"{name}::{rest.split('[', 1)[0]}" in names


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave out the PostgreSQL runs of the tests that read the SQLite file itself, and the SQLite runs of the tests
    of what only PostgreSQL has."""
    left_out = [
        item
        for item in items
        if ("postgres" in _params(item) and _named_in(item.nodeid, SQLITE_ONLY))
        or ("sqlite" in _params(item) and _named_in(item.nodeid, POSTGRES_ONLY))
    ]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [item for item in items if item not in set(left_out)]


def _params(item: pytest.Item) -> tuple[str, ...]:
    callspec = getattr(item, "callspec", None)
    return tuple(str(v) for v in callspec.params.values()) if callspec is not None else ()


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[Store]:
    opened = await open_store(db_path)
    yield opened
    await opened.close()


@pytest.fixture
def scope(store: Store) -> Scope:
    return Scope(store=store, project=PROJECT)


@pytest.fixture
async def client(db_path: Path) -> AsyncIterator[Client]:
    async with Client(build_server(Settings(db_path=db_path, project=PROJECT))) as connected:
        yield connected


def stdio_params(db_path: Path, project: str = PROJECT) -> StdioServerParameters:
    """A real `ctxkeep serve` subprocess; the SDK forwards only a few variables, so pass ours."""
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "ctxkeep", "serve"],
        env={"CTXKEEP_DB": str(db_path), "CTXKEEP_PROJECT": project},
    )


def fixed_clock(when: str = "2026-11-30T12:00:00+00:00") -> Any:
    moment = datetime.fromisoformat(when).astimezone(timezone.utc)
    return lambda: moment


def procurement_state(**changes: Any) -> dict[str, Any]:
    """The seeds' procurement example as a TaskState dict, with optional field overrides."""
    state: dict[str, Any] = {
        "goal": "Compare 20 supplier quotes",
        "constraints": ["No final recommendation before the data is complete"],
        "pending": ["Supplier C freight missing"],
        "decisions": ["Normalize all prices to USD/piece"],
        "facts": [{"key": "Supplier C freight", "value": 0.48, "unit": "USD/piece", "source_ref": "mail-1"}],
        "approvals": [
            {
                "id": "PO-1",
                "action": "issue purchase order",
                "amount": 184300,
                "currency": "USD",
                "status": "pending",
                "reason": "waiting for the procurement director",
            }
        ],
        "next_action": "Ask for Supplier C freight",
    }
    state.update(changes)
    return state


def tool_text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if hasattr(block, "text"))
