"""One MCP server for the length of a run: connect, list tools, serve calls, restart once on a crash.

``McpConnection.run`` is the server's whole lifetime as a trio task, started with ``nursery.start``
inside the run's nursery: it reports ``None`` once the tools are listed (or a message if the server
could not be started), then holds the session open until the run's scope is cancelled. A lost
connection — a stdio server's stdout closing (noticed at once, between calls too), or a call finding
the connection closed (any transport) — wakes the task, which reconnects once; after a second loss
every call answers ``unavailable``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import IO, Any

import anyio
import anyio.abc
import httpx2
import trio
from mcp import ClientSession, MCPError, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.message import SessionMessage

from orchestrator.config.mcpservers import McpServer
from orchestrator.conversation import ToolResult
from orchestrator.mcpclient.results import scrub_value, to_tool_result
from orchestrator.tools.base import failure

__all__ = ["MAX_RESTARTS", "McpConnection"]

#: How many times a lost server is started again within one run.
MAX_RESTARTS = 1
_LOST = (MCPError, trio.ClosedResourceError, trio.BrokenResourceError, OSError, httpx2.HTTPError)


class McpConnection:
    """A started MCP server and its session. ``env``/``headers`` are already resolved (secrets in)."""

    def __init__(
        self,
        name: str,
        server: McpServer,
        *,
        env: dict[str, str],
        headers: dict[str, str],
        secrets: list[str],
        start_timeout: float,
        errlog: IO[str] | None = None,
    ) -> None:
        self.name = name
        self._server = server
        self._env = env
        self._headers = headers
        self._secrets = secrets
        self._start_timeout = start_timeout
        self._errlog = errlog
        self.tools: dict[str, types.Tool] = {}
        self.restarts = 0
        self._session: ClientSession | None = None
        self._ready = trio.Event()
        self._lost = trio.Event()
        self._down: str | None = None

    # --- lifetime ------------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[str | None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; ``task_status`` gets ``None`` once listed, or why the start failed."""
        started = False
        while True:
            connected, reason = await self._serve_once(None if started else task_status)
            if not started and not connected:
                self._down = reason
                return
            started = True
            if self.restarts >= MAX_RESTARTS:
                self._down = (
                    f"MCP server {self.name!r} stopped again after {self.restarts} restart(s) "
                    f"({reason or 'connection closed'}); it is unavailable for the rest of this run"
                )
                self._ready.set()
                return
            self.restarts += 1

    async def _serve_once(self, task_status: trio.TaskStatus[str | None] | None) -> tuple[bool, str | None]:
        """One connection: whether it came up, and why it ended or could not start (if known).

        On the first connection a start failure is reported through ``task_status``.
        """
        self._lost = trio.Event()
        connected = False
        failure_reason: str | None = None
        try:
            async with self._connect() as session:
                with trio.move_on_after(self._start_timeout) as deadline:
                    await session.initialize()
                    self.tools = await _list_all(session)
                if deadline.cancelled_caught:
                    failure_reason = f"did not answer initialize/tools/list within {self._start_timeout:g}s"
                else:
                    connected = True
                    self._session = session
                    self._ready.set()
                    if task_status is not None:
                        task_status.started(None)
                        task_status = None
                    await self._lost.wait()
        except Exception as exc:  # the SDK raises groups and transport errors of several stacks
            failure_reason = _describe(exc)
        finally:
            self._session = None
            if self._ready.is_set():
                self._ready = trio.Event()
        failure_reason = scrub_value(failure_reason, self._secrets)
        if task_status is not None:
            message = f"MCP server {self.name!r} could not be started: {failure_reason or 'connection closed'}"
            task_status.started(message)
            return False, message
        if not connected:
            return False, f"MCP server {self.name!r} could not be restarted: {failure_reason or 'connection closed'}"
        return True, failure_reason

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[ClientSession]:
        server = self._server
        if server.command is not None:
            params = StdioServerParameters(command=server.command, args=list(server.args), env=self._env)
            transport = stdio_client(params, errlog=self._errlog) if self._errlog is not None else stdio_client(params)
            async with transport as (read, write), trio.open_nursery() as watch:
                # The session reads through a relay that notices the server's stdout closing, so a
                # server that dies between calls is restarted at once, not at the next call.
                relay_send, relay_receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
                watch.start_soon(self._relay, read, relay_send)
                try:
                    async with ClientSession(relay_receive, write) as session:
                        yield session
                finally:
                    watch.cancel_scope.cancel()
        else:
            assert server.url is not None
            async with (
                create_mcp_http_client(headers=self._headers) as http,
                streamable_http_client(server.url, http_client=http) as (read, write),
                ClientSession(read, write) as session,
            ):
                yield session

    async def _relay(
        self,
        source: anyio.abc.ObjectReceiveStream[SessionMessage | Exception],
        sink: anyio.abc.ObjectSendStream[SessionMessage | Exception],
    ) -> None:
        """Forward the transport's messages to the session; at end of stream mark the connection lost."""
        async with sink:
            try:
                async for item in source:
                    await sink.send(item)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
        self._mark_lost()

    def _mark_lost(self) -> None:
        """The live connection is gone: later calls wait for the restart; the lifetime task restarts it."""
        self._session = None
        if self._ready.is_set():
            self._ready = trio.Event()
        self._lost.set()

    # --- calls ---------------------------------------------------------------------------------

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call ``tool``; every failure is a result (``unavailable``, ``tool_error``). Cancellable."""
        session = await self._wait_ready()
        if session is None:
            return failure("unavailable", self._down or f"MCP server {self.name!r} is not running")
        try:
            result = await session.call_tool(tool, arguments)
        except MCPError as exc:
            if exc.error.code != types.CONNECTION_CLOSED:
                message = scrub_value(exc.error.message, self._secrets)
                return failure("tool_error", f"MCP tool {self.name}/{tool} failed: {message}")
            return self._lost_during_call(session, tool, "the connection closed")
        except _LOST as exc:
            return self._lost_during_call(session, tool, _describe(exc))
        return to_tool_result(self.name, tool, result, self._secrets)

    async def ping(self) -> bool:
        """One MCP ``ping`` round trip (the transport floor); ``False`` when the server is not up."""
        session = self._session
        if session is None:
            return False
        try:
            await session.send_ping()
        except _LOST:
            return False
        return True

    async def _wait_ready(self) -> ClientSession | None:
        while self._session is None and self._down is None:
            await self._ready.wait()
        return self._session

    def _lost_during_call(self, session: ClientSession, tool: str, why: str) -> ToolResult:
        if session is self._session:  # the first to notice: later calls wait for the restart
            self._mark_lost()
        if self.restarts < MAX_RESTARTS:
            note = "it is being restarted (once): the call may be made again"
        else:
            note = "it was already restarted once and is now unavailable for the rest of this run"
        why = scrub_value(why, self._secrets)
        return failure("unavailable", f"MCP server {self.name!r} stopped during {tool} ({why}); {note}")


async def _list_all(session: ClientSession) -> dict[str, types.Tool]:
    tools: dict[str, types.Tool] = {}
    cursor: str | None = None
    while True:
        params = types.PaginatedRequestParams(cursor=cursor) if cursor else None
        listing = await session.list_tools(params=params)
        tools.update((tool.name, tool) for tool in listing.tools)
        cursor = listing.next_cursor
        if not cursor:
            return tools


def _describe(exc: BaseException) -> str:
    """A one-line reason; the innermost message of an exception group."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPError):
        return exc.error.message
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
