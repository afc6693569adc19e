"""MCP servers as tool sources for Guild roles (the client side of issue 17).

``open_mcp_tools`` starts every server a role references, once per run, inside a nursery that lives as
long as the run; it lists their tools and returns the run's view: the Guild with ``mcp:`` entries
expanded into model-facing tools (``<server>__<tool>``) and one callable per tool, which the engine
dispatches like a native tool (allow-list, schema, timeout, truncation, events). See docs/mcp-tools.md.
"""

from orchestrator.mcpclient.connection import McpConnection
from orchestrator.mcpclient.results import model_tool_name, to_tool_result
from orchestrator.mcpclient.toolset import McpTools, check_mcp_servers, open_mcp_tools

__all__ = ["McpConnection", "McpTools", "check_mcp_servers", "model_tool_name", "open_mcp_tools", "to_tool_result"]
