"""The Guild behind an MCP face: ``orchestrator mcp --face runs`` (see docs/mcp-tools.md).

Another agent (Claude Code, Cursor, any MCP client) delegates a self-contained task to a running
``orchestrator serve`` through seven tools; this package only translates between MCP and the service's
HTTP API — it runs nothing itself.
"""

from orchestrator.runsface.client import DEFAULT_SERVER, ServiceClient, ServiceUnavailable, read_token
from orchestrator.runsface.server import build_runs_server, serve_runs_face

__all__ = [
    "DEFAULT_SERVER",
    "ServiceClient",
    "ServiceUnavailable",
    "build_runs_server",
    "read_token",
    "serve_runs_face",
]
