"""Capabilities: async functions over a Store and pydantic models. No MCP imports here."""
