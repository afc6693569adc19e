"""``orchestrator mcp --transport http``: MCP Streamable HTTP on hypercorn's trio worker.

The SDK's Streamable HTTP ASGI app (stateless, JSON responses) is mounted at ``/mcp`` behind one small
ASGI guard that answers everything else itself:

- ``GET /health``: liveness, ``{"status": "ok"}``, no token;
- ``GET /ready``: 200 ``{"status": "ready", "checks": …}`` when the corpus is loaded and the key directory
  is writable, else 503 ``not-ready`` naming the failing check; no token;
- ``/mcp``: a ``Host`` that is not allowed → 403; a present ``Origin`` that is neither the server's own
  (scheme, allowed host and port it was reached at) nor listed in ``WORKFLOW_SERVER_ALLOWED_ORIGINS`` →
  403; no ``Authorization: Bearer <token>`` (constant-time comparison) → 401. Then the SDK app;
- any other path → 404. Every refusal is JSON ``{error, message, requestId, timestamp}``; ``x-request-id``
  is echoed (or generated) on every answer.

The token is ``WORKFLOW_SERVER_TOKEN`` (at least 16 characters; required off loopback), else — like
``orchestrator serve``'s — a generated one kept in ``<key dir>/http-token`` (0600, created atomically,
reused on restart; ``service/token.py`` keeps it) and printed once on stderr at start.
``WORKFLOW_SERVER_NO_TOKEN=1`` turns it off, on a loopback bind only.

Stateless: no MCP session lives in the process (no ``mcp-session-id``), so any process behind any load
balancer can answer any request. Workflow sessions live on disk (see ``session/store.py`` for the
compare-and-swap that keeps two processes from interleaving a write).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import os
import signal
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio

from orchestrator.errors import ConfigError
from orchestrator.service.token import check_token_value, load_or_create_token
from orchestrator.workflow.errors import WorkspaceConfigError
from orchestrator.workflow.server import WorkflowMCP, preload_corpus
from orchestrator.workflow.serverconfig import WorkflowSettings
from orchestrator.workflow.session.fsio import make_private_dirs
from orchestrator.workflow.session.keys import check_key_dir
from orchestrator.workflow.tools.context import ServerState

__all__ = [
    "NO_TOKEN_ENV",
    "TOKEN_ENV",
    "TOKEN_FILE_NAME",
    "HttpGuard",
    "build_http_app",
    "guard_from_env",
    "is_loopback",
    "readiness",
    "run_http",
    "token_off",
    "with_generated_token",
]

Scope = MutableMapping[str, Any]
AsgiMessage = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[AsgiMessage]]
Send = Callable[[AsgiMessage], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

MCP_PATH = "/mcp"
TOKEN_ENV = "WORKFLOW_SERVER_TOKEN"
#: ``1`` serves ``/mcp`` without a token (a loopback bind only).
NO_TOKEN_ENV = "WORKFLOW_SERVER_NO_TOKEN"
#: The generated token's file, in the key directory.
TOKEN_FILE_NAME = "http-token"
LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
_WILDCARD = frozenset({"0.0.0.0", "::", "[::]", ""})


def is_loopback(host: str) -> bool:
    """Whether a bind host or ``Host`` name is this machine only (``localhost``, 127/8, ``::1``)."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class HttpGuard:
    """What ``/mcp`` lets in. ``token`` is the bearer token (``None``: no token required, loopback only);
    ``hosts`` the accepted ``Host`` names (``None``: any, for a wildcard bind without a list);
    ``origins`` extra accepted ``Origin`` values besides the server's own."""

    token: str | None
    hosts: frozenset[str] | None
    origins: frozenset[str]

    def host_allowed(self, host_header: str) -> bool:
        if self.hosts is None:
            return True
        return _host_name(host_header) in self.hosts

    def origin_allowed(self, origin: str, host_header: str, scheme: str) -> bool:
        if origin in self.origins:
            return True
        return self.host_allowed(host_header) and origin.lower() == f"{scheme}://{host_header}".lower()

    def token_ok(self, authorization: str) -> bool:
        if self.token is None:
            return True
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() != "bearer":
            return False
        return hmac.compare_digest(given.strip().encode("utf-8", "surrogatepass"), self.token.encode())


def _host_name(host_header: str) -> str:
    """The name part of a ``Host`` header (port dropped, IPv6 brackets kept off), lowercased."""
    value = host_header.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def _split_list(value: str | None) -> list[str]:
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def token_off(env: Mapping[str, str]) -> bool:
    return env.get(NO_TOKEN_ENV, "").strip().lower() in ("1", "true", "yes")


def guard_from_env(settings: WorkflowSettings, env: Mapping[str, str]) -> HttpGuard:
    """The guard for this bind, with ``WORKFLOW_SERVER_TOKEN`` as its token (``None`` when unset: see
    ``with_generated_token``). Raises ``ValueError`` (a configuration error) for a bind beyond loopback
    without ``WORKFLOW_SERVER_TOKEN``, a token under 16 characters, or ``WORKFLOW_SERVER_NO_TOKEN`` off
    loopback."""
    token = env.get(TOKEN_ENV) or None
    if token is not None:
        try:
            check_token_value(TOKEN_ENV, token)
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
    if token is None and not is_loopback(settings.host):
        raise ValueError(
            f"--host {settings.host} is reachable beyond this machine; set {TOKEN_ENV} (every /mcp "
            "request must then carry 'Authorization: Bearer <token>') or bind 127.0.0.1"
        )
    if token_off(env) and not is_loopback(settings.host):
        raise ValueError(f"{NO_TOKEN_ENV} is accepted on a loopback bind only, not on {settings.host}")
    listed = {_host_name(h) for h in _split_list(env.get("WORKFLOW_SERVER_ALLOWED_HOSTS"))}
    hosts: frozenset[str] | None
    if settings.host.strip("[]") in _WILDCARD and not listed:
        hosts = None  # behind a load balancer the Host is its name; the token is the gate
    else:
        hosts = frozenset({*(n.strip("[]") for n in LOOPBACK_NAMES), settings.host.strip("[]").lower(), *listed})
    origins = frozenset(o.rstrip("/") for o in _split_list(env.get("WORKFLOW_SERVER_ALLOWED_ORIGINS")))
    return HttpGuard(token=token, hosts=hosts, origins=origins)


def with_generated_token(guard: HttpGuard, settings: WorkflowSettings, env: Mapping[str, str]) -> tuple[HttpGuard, str]:
    """``guard`` with a token, and the line to print once at start. Without ``WORKFLOW_SERVER_TOKEN`` the
    token is the one kept in ``<key dir>/http-token`` (created when missing, like ``serve``'s); with
    ``WORKFLOW_SERVER_NO_TOKEN`` on loopback there is none. Raises ``ValueError`` when the file or its
    directory cannot be used (named, with the fix)."""
    if guard.token is not None:
        return guard, f"every /mcp request needs 'Authorization: Bearer <token>' (the token is {TOKEN_ENV})"
    if token_off(env):
        return guard, (
            f"WARNING: THE TOKEN IS OFF ({NO_TOKEN_ENV}) — any program on this machine can call /mcp; "
            "only the Host and Origin checks stand"
        )
    path = settings.key_dir / TOKEN_FILE_NAME
    try:
        make_private_dirs(settings.key_dir)
        check_key_dir(settings.key_dir, os.stat(settings.key_dir))
        token = load_or_create_token(path)
    except WorkspaceConfigError as exc:
        raise ValueError(exc.message) from None
    except ConfigError as exc:
        raise ValueError(str(exc)) from None
    except OSError as exc:
        raise ValueError(
            f"cannot keep the HTTP token in {path}: {exc.strerror or exc} (set {TOKEN_ENV}, or "
            "WORKFLOW_SERVER_KEY_DIR to a writable directory)"
        ) from None
    line = f"every /mcp request needs 'Authorization: Bearer {token}' (the token is kept in {path})"
    return HttpGuard(token=token, hosts=guard.hosts, origins=guard.origins), line


def _writable_dir(path: Path) -> bool:
    """Whether ``path`` is a writable directory, or could be created as one (nearest existing parent)."""
    probe = path
    while not probe.exists():
        if probe.parent == probe:
            return False
        probe = probe.parent
    return probe.is_dir() and os.access(probe, os.W_OK | os.X_OK)


def readiness(state: ServerState) -> tuple[bool, dict[str, Any]]:
    """``(ready, checks)``: the corpus loads with at least one workflow, the key directory is writable,
    and the workspace and the engineering directory (when configured) are directories."""
    settings = state.settings
    checks: dict[str, Any] = {}
    try:
        corpus = state.corpus()
        checks["workflowDir"] = bool(settings.workflow_dir.is_dir() and corpus.workflows)
    except Exception:  # a corpus that cannot load is "not ready", never a 500
        checks["workflowDir"] = False
    checks["sessionKeyWritable"] = _writable_dir(settings.key_dir)
    if settings.workspace is not None:
        checks["workspaceDir"] = settings.workspace.is_dir()
    if settings.engineering_dir is not None:
        checks["engineeringDir"] = settings.engineering_dir.is_dir()
    return all(checks.values()), checks


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers") or []:
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


async def _json(
    send: Send, status: int, body: dict[str, Any], request_id: str, extra: tuple[tuple[bytes, bytes], ...] = ()
) -> None:
    data = json.dumps(body).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"x-request-id", request_id.encode("latin-1", "replace")),
        (b"cache-control", b"no-store"),
        *extra,
    ]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": data})


def _refusal(error: str, message: str, request_id: str) -> dict[str, Any]:
    return {"error": error, "message": message, "requestId": request_id, "timestamp": time.time()}


def build_http_app(inner: ASGIApp, guard: HttpGuard, state: ServerState) -> ASGIApp:
    """The guard in front of the SDK's Streamable HTTP app ``inner`` (which serves ``/mcp``)."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await inner(scope, receive, send)
            return
        if scope["type"] != "http":  # no WebSocket here
            await send({"type": "websocket.close", "code": 1008})
            return
        given_id = _header(scope, b"x-request-id")
        request_id = given_id[:128] if given_id else uuid.uuid4().hex
        path = scope.get("path", "")
        method = scope.get("method", "GET")

        async def send_with_id(message: AsgiMessage) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() != b"x-request-id"]
                message = {**message, "headers": [*headers, (b"x-request-id", request_id.encode("latin-1", "replace"))]}
            await send(message)

        if path in ("/health", "/ready"):
            if method not in ("GET", "HEAD"):
                await _json(send, 405, _refusal("method_not_allowed", f"{path} answers GET", request_id), request_id)
            elif path == "/health":
                await _json(send, 200, {"status": "ok"}, request_id)
            else:
                ready, checks = readiness(state)
                body = {"status": "ready" if ready else "not-ready", "checks": checks}
                await _json(send, 200 if ready else 503, body, request_id)
            return
        if path.rstrip("/") != MCP_PATH:
            await _json(
                send,
                404,
                _refusal("not_found", f"no route {path!r}; the MCP endpoint is {MCP_PATH}", request_id),
                request_id,
            )
            return
        host = _header(scope, b"host") or ""
        if not guard.host_allowed(host):
            await _json(
                send,
                403,
                _refusal(
                    "forbidden_host",
                    f"Host {host!r} is not allowed (WORKFLOW_SERVER_ALLOWED_HOSTS lists more)",
                    request_id,
                ),
                request_id,
            )
            return
        origin = _header(scope, b"origin")
        if origin is not None and not guard.origin_allowed(origin.rstrip("/"), host, scope.get("scheme", "http")):
            await _json(
                send,
                403,
                _refusal(
                    "forbidden_origin",
                    f"Origin {origin!r} is not this server's own (WORKFLOW_SERVER_ALLOWED_ORIGINS lists more)",
                    request_id,
                ),
                request_id,
            )
            return
        if not guard.token_ok(_header(scope, b"authorization") or ""):
            await _json(
                send,
                401,
                _refusal(
                    "unauthorized",
                    "this server requires 'Authorization: Bearer <token>' "
                    "(WORKFLOW_SERVER_TOKEN, or the http-token file in its key directory)",
                    request_id,
                ),
                request_id,
                ((b"www-authenticate", b'Bearer realm="workflow-server"'),),
            )
            return
        await inner({**scope, "path": MCP_PATH, "raw_path": MCP_PATH.encode()}, receive, send_with_id)

    return app


async def run_http(
    server: WorkflowMCP, settings: WorkflowSettings, guard: HttpGuard, on_listening: Callable[[list[str]], None]
) -> None:
    """Serve until SIGTERM/SIGINT, then drain (hypercorn's graceful timeout, 10 s)."""
    from hypercorn.config import Config
    from hypercorn.trio import serve
    from mcp.server.transport_security import TransportSecuritySettings

    inner = server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        json_response=True,
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),  # ours is in front
    )
    app = build_http_app(inner, guard, server.state)
    config = Config()
    host = settings.host
    config.bind = [f"[{host.strip('[]')}]:{settings.port}" if ":" in host.strip("[]") else f"{host}:{settings.port}"]
    config.accesslog = None
    config.errorlog = None  # hypercorn logs through Python logging, i.e. our JSON lines on stderr
    config.graceful_timeout = 10.0
    with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:

        async def shutdown_trigger() -> None:
            async for _ in signals:
                return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(preload_corpus, server.state)
            binds = await nursery.start(
                lambda task_status: serve(app, config, shutdown_trigger=shutdown_trigger, task_status=task_status)
            )
            on_listening(list(binds))
