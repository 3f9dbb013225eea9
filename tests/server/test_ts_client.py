"""A client nobody here wrote: the official TypeScript MCP SDK (npm @modelcontextprotocol/sdk) against `ctxkeep serve`.

Needs Node and `npm ci --prefix tests/ts_client` (.ci/run does it); skipped with that message otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT
from tests.paths import TESTS

pytestmark = pytest.mark.slow
FOLDER = TESTS / "ts_client"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
@pytest.mark.skipif(
    not (FOLDER / "node_modules" / "@modelcontextprotocol" / "sdk").is_dir(),
    reason="the TypeScript SDK is not installed: run `npm ci --prefix tests/ts_client` (.ci/run does)",
)
def test_the_typescript_sdk_lists_the_tools_and_saves_and_loads(tmp_path: Path) -> None:
    env = {**os.environ, "CTXKEEP_DB": str(tmp_path / "ctxkeep.db"), "CTXKEEP_PROJECT": PROJECT}
    done = subprocess.run(
        ["node", "client.mjs", sys.executable], cwd=FOLDER, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"checkpoint_save", "checkpoint_load", "build_working_set", "memory_write", "action_intent"} <= set(
        report["tools"]
    )
    assert report["saved"]["version"] == 1 and report["saved"]["verification"]["ok"]
    assert report["loaded"]["state"]["pending"] == ["Supplier C freight missing"]
    assert report["loaded"]["hash"] == report["saved"]["hash"]
    assert report["refused"]["isError"] and report["refused"]["text"].startswith(
        "checkpoint_save refused: 1 violation(s)"
    )
