"""`codex exec` with ctxkeep installed, with and without `required = true`, against the OpenAI mock.

Each run is a fresh HOME and project, `ctxkeep install codex` as a user runs it (the server and the hooks), and one
`codex exec` (hooks trusted with `--dangerously-bypass-hook-trust`) whose scripted model answers at once, or calls
ctxkeep's `checkpoint_list` first. Variants, interleaved: the install as written (`required = true`), the same with
the `required` line removed, and no ctxkeep at all (the floor). Per variant: the median wall time, how many first
model requests carried ctxkeep's tools, and how many calls of `checkpoint_list` got a result. Needs the CLIs of
tests/e2e (`npm ci --prefix tests/e2e`); without them the rows say so.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.common import CTXKEEP_COMMAND
from ctxkeep.project import default_db_path
from tests.e2e.clients import Codex
from tests.e2e.mock_api import call, text

TRUST = "--dangerously-bypass-hook-trust"
VARIANTS = ("required", "not required", "no ctxkeep")


def _one(variant: str, calls: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        script = [call("checkpoint_list", {}), text("done")] if calls else [text("ok")]
        cli = Codex(Path(folder), script, ctxkeep=False)
        with cli:
            env = {"CTXKEEP_DB": str(default_db_path({"HOME": str(cli.home)}))}
            if variant != "no ctxkeep":
                done = subprocess.run(
                    [*CTXKEEP_COMMAND, "install", "codex"], cwd=cli.proj, env=cli.env() | env, capture_output=True
                )
                assert done.returncode == 0, done.stderr
            if variant == "not required":
                config = cli.config_toml.read_text()
                assert "required = true\n" in config
                cli.config_toml.write_text(config.replace("required = true\n", ""))
            run = cli.run("What is next?", TRUST, env=env)
            requests = cli.requests()
            tools = bool(requests) and "checkpoint_list" in cli.tools(requests[0].body)
            answered = None
            if calls:
                results = cli.tool_results(requests[1].body) if len(requests) > 1 else []
                answered = bool(results) and "unsupported call" not in results[-1]
    return {"seconds": run.elapsed, "returncode": run.returncode, "tools": tools, "answered": answered}


def run(quick: bool) -> dict[str, Any]:
    reason = Codex.missing()
    if reason:
        return {"title": "codex exec with and without required", "rows": [], "notes": [f"not run: {reason}"]}
    rounds = 3 if quick else 7
    runs: dict[tuple[str, bool], list[dict[str, Any]]] = {(v, c): [] for v in VARIANTS for c in (False, True)}
    for round_ in range(rounds):
        for variant in VARIANTS if round_ % 2 == 0 else tuple(reversed(VARIANTS)):
            for calls in (False, True):
                if calls and variant == "no ctxkeep":
                    continue
                runs[(variant, calls)].append(_one(variant, calls))
    floor = statistics.median(r["seconds"] for r in runs[("no ctxkeep", False)])
    rows = []
    for variant in VARIANTS[:2]:
        answered, called = runs[(variant, False)], runs[(variant, True)]
        median = statistics.median(r["seconds"] for r in answered)
        rows.append(
            {
                "metric": f"codex exec, ctxkeep {variant}: median wall time (model answers at once)",
                "value": f"{median:.2f} s ({median / floor:.1f}× without ctxkeep)",
                "baseline": f"{floor:.2f} s without ctxkeep",
                "target": "",
            }
        )
        rows.append(
            {
                "metric": f"codex exec, ctxkeep {variant}: first requests with ctxkeep's tools; checkpoint_list answered",
                "value": f"{sum(r['tools'] for r in answered + called)} of {len(answered + called)}; "
                f"{sum(bool(r['answered']) for r in called)} of {len(called)}",
                "baseline": "",
                "target": "",
            }
        )
    return {
        "title": "codex exec with and without required",
        "rows": rows,
        "notes": [
            f"{rounds} rounds, variants interleaved; each run a fresh HOME with `ctxkeep install codex` (server and "
            f"hooks); load average at the end {os.getloadavg()[0]:.1f}",
            "without `required`, `codex exec` starts its one turn before the server has answered tools/list, and the "
            "turn runs without ctxkeep's tools (a call of one is refused as unsupported)",
        ],
        "raw": {f"{variant}{' +call' if calls else ''}": value for (variant, calls), value in runs.items()},
    }
