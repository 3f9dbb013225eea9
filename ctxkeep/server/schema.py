"""The advertised input schemas: what a model reads, not what the server validates.

Every tool's arguments are validated by its full pydantic schema on the server (limits, patterns,
unknown fields refused by name). What `tools/list` sends is that schema made lean, because it is
paid for in every request of every turn: no titles, `anyOf` with null collapsed to its one type,
no null or empty defaults, no generic size limits (4,000 characters, 200 items, 2^53), no
`additionalProperties: false` (unknown fields are refused by name anyway), definitions used once
inlined, shapes another tool already shows named instead of repeated (`SHARED`, `REPLACED`), and a
property description several tools share said by one of them (`SAID_ONCE`).
"""

from __future__ import annotations

from typing import Any

# limits every text, list and number has; the server enforces them, a model never needs them to choose an argument
NOISE_LIMITS = {"maxLength": 200, "maxItems": 200, "maximum": 2**53}
SUBSCHEMA_KEYS = {"items", "anyOf", "oneOf", "allOf", "additionalProperties", "propertyNames"}
# a definition shown whole by one tool and only named by the others (tool that shows it, what the others say)
SHARED = {"TaskState": ("checkpoint_save", "A TaskState: the shape of checkpoint_save's `state`.")}
# property descriptions shared by several tools: said once, by the tool named, and left out of the others (or shortened)
SAID_ONCE = {
    "Your name for the task, e.g. 'fix-login-bug'.": ("checkpoint_save", None),
    "text: readable, for you (default); json: also the structured result, for programs.": (
        "checkpoint_load",
        "text (default) or json.",
    ),
    "Claim the task's lease as this owner (your agent or machine name).": ("checkpoint_save", "As in checkpoint_save."),
    "The lease's length (default 600 s; 0 releases it).": ("checkpoint_save", None),
    "An evidence ref, e.g. 'ev_3f2a…'.": ("evidence_get", None),
}
# properties advertised by name instead of repeating a shape the same schema shows (the server validates them in full)
REPLACED = {
    ("evidence_put", "items"): {
        "type": "array",
        "items": {"type": "object"},
        "description": "A batch instead of content: objects with the fields above (content required).",
    }
}


def lean_schema(tool: str, schema: dict[str, Any]) -> dict[str, Any]:
    """The schema `tools/list` advertises for `tool` (a new dict; `schema` is left as it is)."""
    defs: dict[str, Any] = schema.get("$defs", {})
    uses = _ref_counts(schema)
    kept: dict[str, Any] = {}

    def resolve(node: Any) -> Any:
        if isinstance(node, list):
            return [resolve(item) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            shared = SHARED.get(name)
            if shared and shared[0] != tool:
                return {"type": "object", "description": shared[1]} | _describe(node)
            if uses.get(name, 0) > 1:
                if name not in kept:
                    kept[name] = {}
                    kept[name] = resolve(defs[name])
                return node
            return {k: v for k, v in resolve(defs[name]).items() if k != "description"} | _describe(node)
        return _lean_node({key: _sub(key, value) for key, value in node.items() if key != "$defs"})

    def _sub(key: str, value: Any) -> Any:
        if key == "properties":
            return {name: resolve(schema_) for name, schema_ in value.items()}
        return resolve(value) if key in SUBSCHEMA_KEYS else value

    lean: dict[str, Any] = resolve({key: value for key, value in schema.items() if key != "$defs"})
    for name, prop in lean.get("properties", {}).items():
        said = SAID_ONCE.get(prop.get("description", ""))
        if said and said[0] != tool:
            lean["properties"][name] = {k: v for k, v in prop.items() if k != "description"} | (
                {"description": said[1]} if said[1] else {}
            )
    for (owner, name), replacement in REPLACED.items():
        if owner == tool and name in lean.get("properties", {}):
            lean["properties"][name] = replacement
            kept.pop("EvidenceItem", None)
    if kept:
        lean["$defs"] = kept
    return lean


def _describe(node: dict[str, Any]) -> dict[str, Any]:
    return {"description": node["description"]} if "description" in node else {}


def _ref_counts(node: Any, counts: dict[str, int] | None = None) -> dict[str, int]:
    """How often each definition is referenced (definitions referenced from definitions count too)."""
    counts = {} if counts is None else counts
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            name = ref.removeprefix("#/$defs/")
            counts[name] = counts.get(name, 0) + 1
        for value in node.values():
            _ref_counts(value, counts)
    elif isinstance(node, list):
        for item in node:
            _ref_counts(item, counts)
    return counts


def _lean_node(node: dict[str, Any]) -> dict[str, Any]:
    """One schema object (its subschemas already lean) made lean."""
    out = {key: value for key, value in node.items() if key != "title"}
    if out.get("additionalProperties") in (False, True):
        del out["additionalProperties"]
    for key, floor in NOISE_LIMITS.items():
        if isinstance(out.get(key), int) and out[key] >= floor:
            del out[key]
    if out.get("minLength") == 1:
        del out["minLength"]
    if "default" in out and out["default"] in (None, [], {}):
        del out["default"]
    branches = out.get("anyOf")
    if isinstance(branches, list):
        out = _collapse(out, [b for b in branches if b != {"type": "null"}])
    return out


def _collapse(node: dict[str, Any], branches: list[Any]) -> dict[str, Any]:
    """`anyOf` without its null branch: one branch merges into the node; plain types merge into one `type`."""
    rest = {key: value for key, value in node.items() if key != "anyOf"}
    if len(branches) == 1 and isinstance(branches[0], dict):
        return {**branches[0], **rest}
    if all(isinstance(b, dict) and set(b) == {"type"} for b in branches):
        types = [b["type"] for b in branches]
        if "number" in types and "integer" in types:
            types.remove("integer")
        return {"type": types[0] if len(types) == 1 else types} | rest
    return {"anyOf": branches} | rest
