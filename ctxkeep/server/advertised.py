"""What the server lists (tools, resources, resource templates, prompts), read without importing what they run.

The four lists follow from the code alone (never from the database), so `ctxkeep serve` answers `tools/list` and
the other lists from advertised.json: a client's handshake then imports none of the models, the storage or the tool
functions, which load at the first call. The file holds each definition exactly as the wire carries it, written
from the registered definitions by `python -m ctxkeep.server.write_advertised`; tests/server/test_advertised.py checks, byte for
byte, that it is what the registered definitions list.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from mcp.types import Prompt, Resource, ResourceTemplate, Tool

PATH = Path(__file__).with_name("advertised.json")


class Lists(NamedTuple):
    """The server's four lists, in the order the SDK lists them."""

    tools: list[Tool]
    resources: list[Resource]
    resource_templates: list[ResourceTemplate]
    prompts: list[Prompt]

    def wire(self) -> dict[str, list[dict[str, Any]]]:
        """Each definition as the SDK sends it (aliases, no null fields)."""
        return {
            name: [item.model_dump(by_alias=True, mode="json", exclude_none=True) for item in items]
            for name, items in self._asdict().items()
        }

    def text(self) -> str:
        """The contents of advertised.json for these lists."""
        return json.dumps(self.wire(), indent=1, ensure_ascii=False) + "\n"


@cache
def advertised() -> Lists:
    """The lists advertised.json holds (read once per process)."""
    data = json.loads(PATH.read_text(encoding="utf-8"))
    return Lists(
        tools=[Tool.model_validate(item) for item in data["tools"]],
        resources=[Resource.model_validate(item) for item in data["resources"]],
        resource_templates=[ResourceTemplate.model_validate(item) for item in data["resource_templates"]],
        prompts=[Prompt.model_validate(item) for item in data["prompts"]],
    )
