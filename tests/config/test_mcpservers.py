"""The deployment's ``mcpServers`` block and the roles' ``mcp:`` entries, checked at load time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import write_deployment, write_guild

from orchestrator.config import load_settings, render_settings
from orchestrator.config.mcpservers import McpRef, parse_mcp_ref
from orchestrator.errors import ConfigError


def _load(tmp_path: Path, servers: Any, tools: list[str] | None = None, env: dict[str, str] | None = None):
    guild = write_guild(tmp_path / "guild", {"lead": tools or ["finish"]})
    deployment = write_deployment(tmp_path / "deployment.json", "http://127.0.0.1:9/v1")
    document = json.loads(deployment.read_text())
    document["mcpServers"] = servers
    deployment.write_text(json.dumps(document))
    secrets = tmp_path / "secrets"
    secrets.mkdir(exist_ok=True)
    return load_settings(guild, deployment, env or {}, secrets_dir=secrets)


def _problems(tmp_path: Path, servers: Any, tools: list[str] | None = None) -> str:
    with pytest.raises(ConfigError) as info:
        _load(tmp_path, servers, tools)
    return "\n".join(info.value.problems)


def test_parse_mcp_ref() -> None:
    assert parse_mcp_ref("read_file") is None
    assert parse_mcp_ref("mcp:github/create_issue") == McpRef("github", "create_issue")
    assert parse_mcp_ref("mcp:github/*") == McpRef("github", None)
    assert "mcp:<server>/<tool>" in str(parse_mcp_ref("mcp:github"))
    assert "not a valid MCP server name" in str(parse_mcp_ref("mcp:a__b/x"))


def test_both_shapes_load_and_render_without_values(tmp_path: Path) -> None:
    servers = {
        "files": {"command": "npx", "args": ["-y", "server-filesystem", "."], "env": {"TOKEN": "${FS_TOKEN}"}},
        "remote": {"url": "https://mcp.example.test/mcp", "headers": {"Authorization": "Bearer ${REMOTE}"}},
    }
    settings = _load(
        tmp_path,
        servers,
        ["finish", "mcp:files/*", "mcp:remote/search"],
        {"FS_TOKEN": "fs-abcdefgh", "REMOTE": "rm-abcdefgh"},
    )
    assert settings.mcp_resolved["files"].env == {"TOKEN": "fs-abcdefgh"}
    assert settings.mcp_resolved["remote"].headers == {"Authorization": "Bearer rm-abcdefgh"}
    assert "abcdefgh" not in repr(settings.mcp_resolved)
    rendered = json.dumps(render_settings(settings))
    assert "abcdefgh" not in rendered and '"TOKEN": "<redacted>"' in rendered


def test_unknown_keys_name_the_path(tmp_path: Path) -> None:
    problems = _problems(tmp_path, {"files": {"command": "x", "enviroment": {}}})
    assert "enviroment" in problems and "$.mcpServers.files" in problems


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ({}, "mcpServers.files needs exactly one of `command`"),
        ({"command": "x", "url": "http://h/mcp"}, "mcpServers.files needs exactly one of `command`"),
        ({"command": " "}, "mcpServers.files.command must be a non-empty string"),
        ({"url": "ftp://h/x"}, "mcpServers.files.url must be an http:// or https:// URL"),
        ({"url": "http://h/mcp", "env": {"A": "b"}}, "mcpServers.files.env only applies to a stdio server"),
        ({"command": "x", "headers": {"A": "b"}}, "mcpServers.files.headers only applies to an HTTP server"),
        ({"command": "x", "env": {"1BAD": "b"}}, "mcpServers.files.env.1BAD is not a valid environment variable"),
        ({"command": "x", "env": {"A": "${bad name}"}}, "mcpServers.files.env.A `${bad name}` is not a valid"),
        (
            {"command": "x", "env": {"A": "${MISSING_ONE}"}},
            "`${MISSING_ONE}` is not set: set the environment variable MISSING_ONE",
        ),
    ],
)
def test_value_rules_name_the_field(tmp_path: Path, server: dict[str, Any], expected: str) -> None:
    assert expected in _problems(tmp_path, {"files": server})


def test_a_server_name_with_the_separator_is_refused(tmp_path: Path) -> None:
    assert "no '__'" in _problems(tmp_path, {"a__b": {"command": "x"}})


def test_role_entries_must_name_a_declared_server(tmp_path: Path) -> None:
    problems = _problems(tmp_path, {"files": {"command": "x"}}, ["finish", "mcp:github/*", "mcp:files"])
    assert "roles.lead.tools[1] `mcp:github/*` names MCP server `github`" in problems
    assert "(declared: files)" in problems
    assert "roles.lead.tools[2] `mcp:files` is not an MCP tool reference" in problems
