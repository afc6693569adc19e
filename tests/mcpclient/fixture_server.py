"""A small MCP server for the tests, written with the official SDK: ``python fixture_server.py``.

Tools: ``echo`` (text back), ``add`` (structured result), ``secret_env`` (the value of FIXTURE_TOKEN,
to prove secrets are passed and scrubbed), ``env_names``, ``fail`` (an ``isError`` result), ``crash`` (the process
exits mid-call), ``exit_soon`` (answers, then the process exits), ``hang`` (never answers), ``pid`` (the
server process's id). Runs over
stdio when executed; the tests serve ``build().streamable_http_app()`` with Hypercorn's trio worker for
Streamable HTTP.
"""

from __future__ import annotations

import os
import sys
import threading

import anyio
import trio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel


class Sum(BaseModel):
    total: int


def build() -> MCPServer:
    server = MCPServer("fixture")

    @server.tool()
    async def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    async def add(a: int, b: int) -> Sum:
        """Add two integers."""
        return Sum(total=a + b)

    @server.tool()
    async def secret_env() -> str:
        """Report the FIXTURE_TOKEN the server was started with."""
        return f"token is {os.environ.get('FIXTURE_TOKEN', '(unset)')}"

    @server.tool()
    async def env_names() -> list[str]:
        """The names of the server's environment variables."""
        return sorted(os.environ)

    @server.tool()
    async def fail(reason: str) -> str:
        """Always fail with the reason."""
        raise ToolError(f"failed on purpose: {reason}")

    @server.tool()
    async def crash() -> str:
        """Exit the server process in the middle of the call."""
        sys.stderr.write("fixture server: crashing on request\n")
        os._exit(3)

    @server.tool()
    async def exit_soon() -> str:
        """Answer, then exit the process a moment later (a crash between calls)."""
        threading.Timer(0.2, os._exit, [4]).start()
        return "exiting"

    @server.tool()
    async def pid() -> int:
        """The server process's id."""
        return os.getpid()

    @server.tool()
    async def hang() -> str:
        """Never answer."""
        await trio.sleep_forever()
        return "unreachable"

    return server


if __name__ == "__main__":
    anyio.run(build().run_stdio_async, backend="trio")
