"""Helpers for the MCP-client tests: the fixture server over stdio and over Streamable HTTP, and settings."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from tests.helpers import write_deployment, write_guild
from tests.mcpclient.fixture_server import build

from orchestrator.config import Settings, load_settings

HERE = Path(__file__).parent
FIXTURE_SERVER = HERE / "fixture_server.py"


def stdio_server(**env: str) -> dict[str, Any]:
    """The ``mcpServers`` entry that starts the fixture server over stdio."""
    entry: dict[str, Any] = {"command": sys.executable, "args": [str(FIXTURE_SERVER)]}
    if env:
        entry["env"] = env
    return entry


def _require_bearer(app: Any, token: str) -> Any:
    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != f"Bearer {token}".encode():
                await send({"type": "http.response.start", "status": 401, "headers": []})
                await send({"type": "http.response.body", "body": b"unauthorized"})
                return
        await app(scope, receive, send)

    return guarded


@asynccontextmanager
async def http_server(token: str | None = None) -> AsyncIterator[str]:
    """The fixture server over Streamable HTTP (Hypercorn, trio worker) on a free port; yields its URL."""
    server = build()
    app = server.streamable_http_app()
    asgi = _require_bearer(app, token) if token else app
    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.errorlog = None
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve, asgi, config)
        try:
            yield f"{binds[0]}/mcp"
        finally:
            nursery.cancel_scope.cancel()


def mcp_settings(
    tmp_path: Path,
    api_base: str,
    roles: Mapping[str, list[str]],
    servers: Mapping[str, Mapping[str, Any]],
    *,
    env: Mapping[str, str] | None = None,
    timeout: int = 30,
    max_chars: int = 4000,
    context_window: int = 32768,
) -> Settings:
    """Settings for a Guild with ``roles`` and a deployment declaring ``servers`` as ``mcpServers``."""
    guild = write_guild(tmp_path / "guild", roles)
    deployment = write_deployment(
        tmp_path / "deployment.json",
        api_base,
        defaultToolTimeoutSeconds=timeout,
        context_policy={"maxToolOutputChars": max_chars},
        model={"contextWindow": context_window},
    )
    document = json.loads(deployment.read_text())
    document["mcpServers"] = {name: dict(entry) for name, entry in servers.items()}
    deployment.write_text(json.dumps(document))
    return load_settings(guild, deployment, dict(env or {}), secrets_dir=tmp_path / "no-secrets")
