"""A probe hook for the real CLIs: `python probe_hook.py LOG EVENT SHAPE` appends its input to LOG (one JSON line) and
prints the marker `PROBE-<EVENT>-<SHAPE>` in one of the output shapes clients read: `text` (plain stdout), `context`
(`hookSpecificOutput.additionalContext`) or `system` (`systemMessage`). A test then looks for the marker in what the
mock model received, to learn what the client does with a hook's output."""

from __future__ import annotations

import json
import sys


def main(log: str, event: str, shape: str) -> None:
    given = sys.stdin.read()
    with open(log, "a", encoding="utf-8") as file:
        file.write(json.dumps({"event": event, "shape": shape, "input": json.loads(given or "{}")}) + "\n")
    marker = f"PROBE-{event}-{shape}"
    if shape == "text":
        print(marker)
    elif shape == "context":
        print(json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": marker}}))
    else:
        print(json.dumps({"systemMessage": marker}))


if __name__ == "__main__":
    main(*sys.argv[1:4])
