"""Prompt templates (text only; the MCP registration lives in `ctxkeep.server`)."""

from ctxkeep.prompts.handoff import handoff_text
from ctxkeep.prompts.resume import resume_text
from ctxkeep.tools.checkpoint import summary_request_text as compress_text

__all__ = ["compress_text", "handoff_text", "resume_text"]
