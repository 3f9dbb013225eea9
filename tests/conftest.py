"""Shared fixtures: a real SQLite file in a temp dir, the in-memory MCP client, stdio server params."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from ctxkeep.server import build_server
from ctxkeep.settings import Settings
from ctxkeep.storage import Store
from ctxkeep.tools.scope import Scope

PROJECT = "/projects/alpha"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "ctxkeep.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[Store]:
    opened = await Store.open(db_path)
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
        command=sys.executable, args=["-m", "ctxkeep", "serve"],
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
        "approvals": [{"id": "PO-1", "action": "issue purchase order", "amount": 184300, "currency": "USD",
                       "status": "pending", "reason": "waiting for the procurement director"}],
        "next_action": "Ask for Supplier C freight",
    }
    state.update(changes)
    return state


def tool_text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if hasattr(block, "text"))
