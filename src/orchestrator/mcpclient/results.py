"""Pure translations between MCP's wire values and the engine's: tool names and call results."""

from __future__ import annotations

import re
from typing import Any

from mcp import types

from orchestrator.config.mcpservers import NAME_SEPARATOR
from orchestrator.config.secrets import MIN_SCRUB_LENGTH, REDACTED
from orchestrator.conversation import ToolResult
from orchestrator.tools.base import failure, success

__all__ = ["model_tool_name", "scrub_value", "to_tool_result"]

_NOT_ALLOWED = re.compile(r"[^A-Za-z0-9_-]")
#: OpenAI-style function names are at most 64 characters of ``[A-Za-z0-9_-]``.
MAX_NAME = 64


def model_tool_name(server: str, tool: str) -> str:
    """The name the model sees: ``<server>__<tool>``, other characters as ``_``, cut to 64."""
    return _NOT_ALLOWED.sub("_", f"{server}{NAME_SEPARATOR}{tool}")[:MAX_NAME]


def scrub_value(value: Any, secrets: list[str]) -> Any:
    """``value`` (JSON-like) with every secret inside its strings replaced by the redaction marker."""
    if not secrets:
        return value
    if isinstance(value, str):
        for secret in secrets:
            if len(secret) >= MIN_SCRUB_LENGTH:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {scrub_value(key, secrets): scrub_value(item, secrets) for key, item in value.items()}
    if isinstance(value, list):
        return [scrub_value(item, secrets) for item in value]
    return value


def _content_text(block: types.ContentBlock) -> str:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource
        text = getattr(resource, "text", None)
        return text if isinstance(text, str) else f"[binary resource {resource.uri} omitted]"
    kind = getattr(block, "type", "content")
    return f"[{kind} content omitted]"


def to_tool_result(server: str, tool: str, result: types.CallToolResult, secrets: list[str]) -> ToolResult:
    """A call's result as the engine's ``ToolResult``; ``isError`` becomes a ``tool_error`` failure.

    Success data is the structured content when the tool gives one, else ``{"text": …}`` (text blocks
    joined; other blocks named, not inlined). Secrets the server was started with are scrubbed.
    """
    text = "\n".join(_content_text(block) for block in result.content)
    if result.is_error:
        message = scrub_value(text or "the tool reported an error without a message", secrets)
        return failure("tool_error", f"MCP tool {server}/{tool} failed: {message}")
    if result.structured_content is not None:
        return success(scrub_value(result.structured_content, secrets))
    return success({"text": scrub_value(text, secrets)})
