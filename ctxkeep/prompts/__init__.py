"""Prompt templates (text only; the MCP registration lives in `ctxkeep.server`)."""

from ctxkeep.prompts.resume import resume_text

__all__ = ["resume_text"]
