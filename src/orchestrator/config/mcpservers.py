"""The deployment's ``mcpServers`` block: MCP servers whose tools Guild roles may call.

The shape is the one Claude Desktop, Cursor and Claude Code use: a name mapped to either a stdio
server (``command``, ``args``, ``env``) or a Streamable HTTP server (``url``, ``headers``). Values in
``env`` and ``headers`` may hold ``${NAME}`` references, resolved at startup like the model key: the
environment variable ``NAME``, then the secret file ``/run/secrets/<name>`` (or ``<NAME>``), so
credentials never sit in the file. The resolved values travel in ``McpResolved`` and nowhere else.

Also here: the role-side reference syntax ``mcp:<server>/<tool>`` / ``mcp:<server>/*`` and the checks
that tie the two files together. Everything is pure; problems are ``(field, message)`` pairs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

import msgspec

from orchestrator.config.secrets import REDACTED, read_secret
from orchestrator.schema import StrictBase

__all__ = [
    "MCP_PREFIX",
    "NAME_SEPARATOR",
    "McpRef",
    "McpResolved",
    "McpServer",
    "mcp_server_problems",
    "parse_mcp_ref",
    "reference_problems",
    "resolve_server_secrets",
    "server_decode_problems",
]

MCP_PREFIX = "mcp:"
#: Joins a server name and a tool name into the name the model sees (``files__read``).
NAME_SEPARATOR = "__"
_SERVER_NAME = re.compile(r"^[A-Za-z0-9-]+(?:_[A-Za-z0-9-]+)*$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_REFERENCE = re.compile(r"\$\{([^}]*)\}")


class McpServer(StrictBase):
    """One MCP server: stdio (``command`` …) or Streamable HTTP (``url`` …), never both."""

    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    url: str | None = None
    headers: dict[str, str] = {}


class McpRef(msgspec.Struct, frozen=True):
    """A role's tool entry ``mcp:<server>/<tool>``; ``tool`` is ``None`` for ``mcp:<server>/*``."""

    server: str
    tool: str | None


def parse_mcp_ref(entry: str) -> McpRef | str | None:
    """``None`` for a native tool name, the reference, or a message saying what is malformed."""
    if not entry.startswith(MCP_PREFIX):
        return None
    server, slash, tool = entry[len(MCP_PREFIX) :].partition("/")
    if not slash or not server or not tool:
        return f"`{entry}` is not an MCP tool reference: write mcp:<server>/<tool> or mcp:<server>/*"
    if not _SERVER_NAME.match(server):
        return f"`{entry}` names server `{server}`, which is not a valid MCP server name"
    return McpRef(server=server, tool=None if tool == "*" else tool)


def server_decode_problems(raw: object) -> list[str]:
    """msgspec's messages for each malformed server entry, with the ``$.path`` naming the server.

    (msgspec reports a dict value's path as ``$.mcpServers[...]``; this names the key instead.)
    """
    if not isinstance(raw, dict):
        return []
    problems: list[str] = []
    for name, entry in raw.items():
        try:
            msgspec.convert(entry, McpServer)
        except msgspec.ValidationError as exc:
            message = str(exc)
            where = f"$.mcpServers.{name}"
            problems.append(message.replace("`$", f"`{where}", 1) if "`$" in message else f"{message} - at `{where}`")
    return problems


def mcp_server_problems(servers: Mapping[str, McpServer]) -> list[tuple[str, str]]:
    """Every value-rule violation in ``mcpServers``, as ``(dotted field, message)`` pairs."""
    problems: list[tuple[str, str]] = []
    for name, server in servers.items():
        where = f"mcpServers.{name}"
        if not _SERVER_NAME.match(name):
            problems.append(
                (
                    where,
                    "the server name must be letters, digits, '-' and single '_' (no '__': it joins "
                    "server and tool in the names the model sees)",
                )
            )
        if (server.command is None) == (server.url is None):
            problems.append((where, "needs exactly one of `command` (a stdio server) or `url` (Streamable HTTP)"))
        if server.command is not None:
            if not server.command.strip():
                problems.append((f"{where}.command", "must be a non-empty string"))
            if server.headers:
                problems.append((f"{where}.headers", "only applies to an HTTP server (`url`); use `env` for stdio"))
        if server.url is not None:
            if not re.match(r"^https?://[^/\s]+", server.url):
                problems.append((f"{where}.url", f"must be an http:// or https:// URL (got {server.url!r})"))
            if server.args:
                problems.append((f"{where}.args", "only applies to a stdio server (`command`)"))
            if server.env:
                problems.append((f"{where}.env", "only applies to a stdio server (`command`); use `headers`"))
        for key, value in server.env.items():
            if not _ENV_NAME.match(key):
                problems.append((f"{where}.env.{key}", "is not a valid environment variable name"))
            problems.extend((f"{where}.env.{key}", message) for message in _reference_problems(value))
        for key, value in server.headers.items():
            if not _HEADER_NAME.match(key):
                problems.append((f"{where}.headers.{key}", "is not a valid HTTP header name"))
            problems.extend((f"{where}.headers.{key}", message) for message in _reference_problems(value))
    return problems


def _reference_problems(value: str) -> list[str]:
    return [
        f"`${{{name}}}` is not a valid secret reference: write ${{NAME}} with NAME a variable name"
        for name in _REFERENCE.findall(value)
        if not _ENV_NAME.match(name)
    ]


def reference_problems(role_tools: Mapping[str, list[str]], servers: Mapping[str, McpServer]) -> list[tuple[str, str]]:
    """Each role ``mcp:`` entry that is malformed or names a server the deployment does not declare.

    The field is the Guild path ``roles.<role>.tools[<i>]``.
    """
    declared = ", ".join(sorted(servers)) or "(none: add an mcpServers block to the deployment file)"
    problems: list[tuple[str, str]] = []
    for role, tools in role_tools.items():
        for index, entry in enumerate(tools):
            ref = parse_mcp_ref(entry)
            if isinstance(ref, str):
                problems.append((f"roles.{role}.tools[{index}]", ref))
            elif ref is not None and ref.server not in servers:
                problems.append(
                    (
                        f"roles.{role}.tools[{index}]",
                        f"`{entry}` names MCP server `{ref.server}`, which the deployment's mcpServers does "
                        f"not declare (declared: {declared})",
                    )
                )
    return problems


class McpResolved(msgspec.Struct, frozen=True, kw_only=True):
    """One server's ``env`` and ``headers`` with references resolved, and the secret values used."""

    env: dict[str, str]
    headers: dict[str, str]
    secrets: list[str]

    def __repr__(self) -> str:
        return f"McpResolved(env={sorted(self.env)!r}, headers={sorted(self.headers)!r}, secrets={REDACTED!r})"


def resolve_server_secrets(
    servers: Mapping[str, McpServer], env: Mapping[str, str], secrets_dir: Path
) -> tuple[dict[str, McpResolved], list[str]]:
    """Every server's ``${NAME}`` references resolved; problems name the key and the variable, never a value."""
    resolved: dict[str, McpResolved] = {}
    problems: list[str] = []
    for name, server in servers.items():
        where = f"mcpServers.{name}"
        env_values, env_secrets = _resolve(server.env, f"{where}.env", env, secrets_dir, problems)
        headers, header_secrets = _resolve(server.headers, f"{where}.headers", env, secrets_dir, problems)
        resolved[name] = McpResolved(env=env_values, headers=headers, secrets=env_secrets + header_secrets)
    return resolved, problems


def _resolve(
    values: Mapping[str, str], where: str, env: Mapping[str, str], secrets_dir: Path, problems: list[str]
) -> tuple[dict[str, str], list[str]]:
    resolved: dict[str, str] = {}
    secrets: list[str] = []
    for key, value in values.items():
        pieces: list[str] = []
        position = 0
        for match in _REFERENCE.finditer(value):
            name = match.group(1)
            if not _ENV_NAME.match(name):
                continue  # reported by mcp_server_problems
            secret, read_problems = read_secret(env, name, (name.lower(), name), secrets_dir)
            problems.extend(read_problems)
            if secret is None:
                problems.append(
                    f"{where}.{key}: `${{{name}}}` is not set: set the environment variable {name} or provide "
                    f"the secret file {secrets_dir / name.lower()}"
                )
            else:
                pieces.append(value[position : match.start()])
                pieces.append(secret.value)
                secrets.append(secret.value)
                position = match.end()
        pieces.append(value[position:])
        resolved[key] = "".join(pieces)
    return resolved, secrets
