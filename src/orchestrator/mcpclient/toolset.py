"""A run's MCP tools: start the referenced servers, check the roles' references, expand the Guild.

``open_mcp_tools`` is the seam the engine's runner uses. It yields either ``McpTools`` (the settings
the run sees, with ``mcp:`` entries replaced by model-facing tool names and their manifests added, and
one callable per tool for the native-tool table) or the list of configuration problems found at start
(a server that could not be started, a listed tool the server does not offer). The servers live in a
nursery that is cancelled when the ``async with`` block ends — with the run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import IO, Any

import msgspec
import trio

from orchestrator.config import Settings
from orchestrator.config.guild import ToolManifest
from orchestrator.config.mcpservers import McpRef, McpResolved, parse_mcp_ref
from orchestrator.conversation import ToolResult
from orchestrator.mcpclient.connection import McpConnection
from orchestrator.mcpclient.results import model_tool_name
from orchestrator.tools.base import NativeTool, ToolContext

__all__ = ["MIN_START_SECONDS", "McpTools", "check_mcp_servers", "open_mcp_tools", "referenced_servers", "users"]

#: A server gets at least this long to start, answer ``initialize`` and list its tools (``npx`` may be
#: fetching the package); a longer tool timeout raises it.
MIN_START_SECONDS = 60.0


@dataclass
class McpTools:
    """The run's view once its MCP servers are up."""

    settings: Settings
    native_tools: dict[str, NativeTool] = field(default_factory=dict)
    connections: dict[str, McpConnection] = field(default_factory=dict)


def referenced_servers(settings: Settings) -> list[str]:
    """The MCP servers the Guild's roles reference, in first-reference order."""
    names: list[str] = []
    for role in settings.guild.roles.values():
        for entry in role.tools:
            ref = parse_mcp_ref(entry)
            if isinstance(ref, McpRef) and ref.server not in names:
                names.append(ref.server)
    return names


def users(settings: Settings, server: str) -> list[str]:
    """The roles whose tools reference MCP server ``server``."""
    return [
        name
        for name, role in settings.guild.roles.items()
        if any(isinstance(ref := parse_mcp_ref(entry), McpRef) and ref.server == server for entry in role.tools)
    ]


def _used_by(settings: Settings, server: str) -> str:
    roles = users(settings, server)
    if not roles:
        return "no role references it"
    return ("used by role " if len(roles) == 1 else "used by roles ") + ", ".join(f"`{r}`" for r in roles)


async def check_mcp_servers(settings: Settings, *, errlog: IO[str] | None = None) -> list[str]:
    """Start every server the deployment declares (once each), list its tools, stop it again; the
    problems a run would meet at start: a server that cannot be started (a missing command, a crash, no
    answer), and a tool a role names that its server lacks. Each names the server and the role."""
    declared = list(settings.deployment.mcp_servers)
    if not declared:
        return []
    async with open_mcp_tools(settings, errlog=errlog, servers=declared) as opened:
        return opened if isinstance(opened, list) else []


@asynccontextmanager
async def open_mcp_tools(
    settings: Settings, *, errlog: IO[str] | None = None, servers: list[str] | None = None
) -> AsyncIterator[McpTools | list[str]]:
    """Start the referenced servers (or ``servers``), once each, for the duration of the block; see the
    module doc."""
    names = referenced_servers(settings) if servers is None else servers
    if not names:
        yield McpTools(settings=settings)
        return
    timeout = max(float(settings.deployment.executor.default_tool_timeout_seconds), MIN_START_SECONDS)
    async with trio.open_nursery() as nursery:
        try:
            problems: list[str] = []
            connections: dict[str, McpConnection] = {}
            for name in names:
                server = settings.deployment.mcp_servers[name]
                resolved = settings.mcp_resolved.get(name) or McpResolved(
                    env=dict(server.env), headers=dict(server.headers), secrets=[]
                )
                connection = McpConnection(
                    name,
                    server,
                    env=resolved.env,
                    headers=resolved.headers,
                    secrets=resolved.secrets,
                    start_timeout=timeout,
                    errlog=errlog,
                )
                start_problem = await nursery.start(connection.run)
                if start_problem is not None:
                    problems.append(f"{start_problem} ({_used_by(settings, name)})")
                else:
                    connections[name] = connection
            yield problems if problems else expand(settings, connections)
        finally:
            nursery.cancel_scope.cancel()


def expand(settings: Settings, connections: Mapping[str, McpConnection]) -> McpTools | list[str]:
    """The run's settings with every role's ``mcp:`` entries resolved against the servers' listings.

    A tool a role lists that its server does not offer is a problem naming the role, the server and
    the tool, with what the server does offer.
    """
    guild = settings.guild
    manifests: dict[str, ToolManifest] = {}
    tools: dict[str, NativeTool] = {}
    roles = {}
    problems: list[str] = []
    for role_name, role in guild.roles.items():
        names: list[str] = []
        for index, entry in enumerate(role.tools):
            ref = parse_mcp_ref(entry)
            if not isinstance(ref, McpRef):
                names.append(entry)
                continue
            connection = connections[ref.server]
            offered = connection.tools
            if ref.tool is not None and ref.tool not in offered:
                listing = ", ".join(sorted(offered)) or "none"
                problems.append(
                    f"role `{role_name}` lists `{entry}` (at `$.roles.{role_name}.tools[{index}]`), but MCP server "
                    f"`{ref.server}` does not offer a tool `{ref.tool}` (it offers: {listing})"
                )
                continue
            for tool_name in [ref.tool] if ref.tool is not None else sorted(offered):
                model_name = model_tool_name(ref.server, tool_name)
                if model_name in guild.tools:
                    problems.append(
                        f"MCP tool `{ref.server}/{tool_name}` would be called `{model_name}`, which a Guild "
                        "manifest already declares"
                    )
                    continue
                tool = offered[tool_name]
                manifests[model_name] = ToolManifest(
                    name=model_name,
                    description=f"[MCP server {ref.server}] {tool.description or tool.title or tool_name}",
                    parameters=dict(tool.input_schema) or {"type": "object"},
                )
                tools[model_name] = _caller(connection, tool_name)
                if model_name not in names:
                    names.append(model_name)
        roles[role_name] = msgspec.structs.replace(role, tools=names)
    if problems:
        return problems
    run_guild = msgspec.structs.replace(guild, roles=roles, tools={**guild.tools, **manifests})
    return McpTools(
        settings=msgspec.structs.replace(settings, guild=run_guild),
        native_tools=tools,
        connections=dict(connections),
    )


def _caller(connection: McpConnection, tool: str) -> NativeTool:
    async def call(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
        return await connection.call(tool, arguments)

    return call
