"""Serve an ``MCPServer`` on this process's stdio over the thread-free wire ``orchestrator mcp`` uses.

The SDK's own ``run_stdio_async`` wraps stdin/stdout in worker-thread file objects (a thread hop per
line read, two per message written); ``workflow/stdio.py``'s ``claim_stdio`` serves the same descriptors
on trio's non-blocking pipe streams and diverts fd 0/1 while serving, so a stray print never corrupts
the wire.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server

from orchestrator.workflow.stdio import claim_stdio

__all__ = ["run_stdio"]


async def run_stdio(server: MCPServer) -> None:
    """Serve ``server`` until the client closes stdin."""
    reader, writer, release = claim_stdio()
    try:
        async with stdio_server(stdin=reader, stdout=writer) as (read_stream, write_stream):  # type: ignore[arg-type]
            lowlevel = server._lowlevel_server
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
    finally:
        release()
