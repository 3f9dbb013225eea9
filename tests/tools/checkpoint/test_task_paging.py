"""Many tasks (every Claude Code session makes one): checkpoint_list, `ctxkeep://tasks` and task-id completion page
through all of them, filtered in SQL (issue 14: 21)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.types import ResourceTemplateReference

from ctxkeep.models import CheckpointSaveRequest, TaskState
from ctxkeep.server import build_server
from ctxkeep.settings import Settings
from ctxkeep.storage import open_store
from ctxkeep.tools.checkpoint.versions import checkpoint_list, checkpoint_save
from ctxkeep.tools.scope import Scope
from tests.conftest import PROJECT, tool_text

pytestmark = pytest.mark.anyio
TASKS = 600


async def _many_tasks(db: Path) -> list[str]:
    """TASKS tasks saved one second apart, task-000 first; returns their ids newest first."""
    store = await open_store(db)
    try:
        start = datetime(2026, 1, 1, tzinfo=timezone.utc)
        for i in range(TASKS):
            moment = start + timedelta(seconds=i)
            scope = Scope(store, PROJECT, clock=lambda moment=moment: moment)  # type: ignore[misc]
            await checkpoint_save(
                scope, CheckpointSaveRequest(task_id=f"task-{i:03d}", state=TaskState(goal=f"goal {i}"))
            )
        # two tasks saved at the same moment: the page boundary must not lose either
        same = Scope(store, PROJECT, clock=lambda: start + timedelta(seconds=TASKS))
        for name in ("tie-a", "tie-b"):
            await checkpoint_save(same, CheckpointSaveRequest(task_id=name, state=TaskState(goal="tie")))
    finally:
        await store.close()
    return ["tie-a", "tie-b"] + [f"task-{i:03d}" for i in reversed(range(TASKS))]


async def _pages(fetch: Any) -> list[list[str]]:
    pages, cursor = [], None
    while True:
        data = await fetch(cursor)
        pages.append([t["task_id"] for t in data["tasks"]])
        cursor = data.get("next_cursor")
        if cursor is None:
            return pages


async def test_checkpoint_list_pages_through_every_task_newest_first(db_path: Path) -> None:
    expected = await _many_tasks(db_path)
    async with Client(build_server(Settings(db_path=db_path, project=PROJECT))) as client:

        async def fetch(cursor: str | None) -> Any:
            result = await client.call_tool("checkpoint_list", {"limit": 500, **({"cursor": cursor} if cursor else {})})
            assert not result.is_error, tool_text(result)
            return result.structured_content

        pages = await _pages(fetch)
        assert [len(p) for p in pages] == [500, TASKS + 2 - 500] and sum(pages, []) == expected
        small = await _pages(lambda cursor: fetch_small(client, cursor))
        assert sum(small, []) == expected and len(small) == (TASKS + 2 + 200 - 1) // 200
        bad = await client.call_tool("checkpoint_list", {"cursor": "not-a-cursor"})
        assert bad.is_error and "cursor" in tool_text(bad) and "next_cursor" in tool_text(bad)


async def fetch_small(client: Client, cursor: str | None) -> Any:
    result = await client.call_tool("checkpoint_list", {"limit": 200, **({"cursor": cursor} if cursor else {})})
    return result.structured_content


async def test_the_tasks_resource_pages_with_its_cursor(db_path: Path) -> None:
    expected = await _many_tasks(db_path)
    async with Client(build_server(Settings(db_path=db_path, project=PROJECT))) as client:

        async def fetch(cursor: str | None) -> Any:
            uri = "ctxkeep://tasks" + (f"?cursor={cursor}" if cursor else "")
            return json.loads((await client.read_resource(uri)).contents[0].text)

        assert sum(await _pages(fetch), []) == expected


async def test_task_ids_complete_from_every_task_filtered_in_sql(scope: Scope, db_path: Path) -> None:
    await _many_tasks(db_path)
    async with Client(build_server(Settings(db_path=db_path, project=PROJECT))) as client:
        ref = ResourceTemplateReference(uri="ctxkeep://tasks/{task_id}")
        oldest = (await client.complete(ref, {"name": "task_id", "value": "TASK-00"})).completion
        assert (
            oldest.values == [f"task-{i:03d}" for i in reversed(range(10))]
            and oldest.total == 10
            and not oldest.has_more
        )
        every = (await client.complete(ref, {"name": "task_id", "value": "task-"})).completion
        assert len(every.values) == 100 and every.total == TASKS and every.has_more
        literal = (await client.complete(ref, {"name": "task_id", "value": "task_%"})).completion
        assert literal.values == []  # LIKE wildcards in the prefix are plain characters
    assert len((await checkpoint_list(scope, limit=TASKS + 2)).tasks) == TASKS + 2
