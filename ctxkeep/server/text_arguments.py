"""Text arguments stay text.

The SDK parses a string argument as JSON whenever its field is not exactly `str`, so clients that send a list as its
JSON text still work. Every optional text field (`str | None`) is such a field: a tool output that happens to be JSON
('{"a": 1}', 'null') would become an object and be refused, or silently become None. Here those fields keep the
string they were sent; fields of other types (lists, objects, numbers) are still parsed.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata


def _is_text(annotation: Any) -> bool:
    """str, an Annotated str, or a union of those with None."""
    if annotation is str:
        return True
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_text(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        members = [member for member in typing.get_args(annotation) if member is not type(None)]
        return bool(members) and all(_is_text(member) for member in members)
    return False


class TextKeepingMetadata(FuncMetadata):
    """A tool's argument metadata that leaves its text fields unparsed."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        text_fields = {name for name, field in self.arg_model.model_fields.items() if _is_text(field.annotation)}
        parsed = super().pre_parse_json({key: value for key, value in data.items() if key not in text_fields})
        return {key: data[key] if key in text_fields else parsed[key] for key in data}


def keeping_text(metadata: FuncMetadata) -> TextKeepingMetadata:
    return TextKeepingMetadata(**{name: getattr(metadata, name) for name in type(metadata).model_fields})
