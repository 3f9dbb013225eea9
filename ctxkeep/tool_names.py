"""ctxkeep's MCP server name and the names of its tools, as every client's hooks and installs know them.

The hooks never offload or shape the output of ctxkeep's own tools (an agent that asked ctxkeep for text needs that
text), so they must tell these tools from another server's, also in a client that does not say which server a tool
came from (Cursor). tests/clients/test_tool_names.py checks the list against the server's `tools/list`.
Standard library only (per-event hooks).
"""

from __future__ import annotations

SERVER_NAME = "ctxkeep"  # the name every install registers the server under
TOOL_NAMES = frozenset(
    {
        "checkpoint_save",
        "checkpoint_load",
        "checkpoint_list",
        "checkpoint_diff",
        "verify_checkpoint",
        "evidence_put",
        "evidence_get",
        "evidence_search",
        "evidence_delete",
        "compress_history",
        "build_working_set",
        "memory_write",
        "memory_search",
        "memory_forget",
        "action_intent",
        "action_result",
    }
)
SAVE_TOOL = "checkpoint_save"  # the call that binds a session to the agent's own task


def is_own_tool(server: str, tool: str) -> bool:
    """Whether `tool` of MCP server `server` is one of ctxkeep's."""
    return server == SERVER_NAME and tool in TOOL_NAMES
