"""The app in-process, behind Quart-Trio's test client, for route logic and the perimeter's rules.

``engine_run(tmp_path, script, roles)`` writes a finished run with the real engine and a sim model into
the workspace ``inprocess_app`` serves. ``inprocess_app(tmp_path, policy=...)`` builds a ``Service`` on
a test Guild whose model endpoint is a closed loopback port (a run that starts fails fast; none is
needed), attaches it to a nursery, runs the app's lifespan and yields ``(app, client)``.
``inprocess_server(...)`` does the same on a given model endpoint (a sim's), starts the service as
``serve`` does and yields an ``InprocessServer``: the polling helpers of ``tests.service.server`` over
the test client, so a route-logic test reads the same whether it talks to a real ``serve`` process or to
the app in this process. What crosses a real socket (Hypercorn, signals, browsers) is tested against a
real ``serve`` process elsewhere.
"""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
from quart.testing import QuartClient
from quart_trio import QuartTrio
from tests.engine.harness import FAST
from tests.helpers import make_settings, serve_script
from tests.service.server import BASE_ENV, ApiPolling
from werkzeug.datastructures import Headers

from orchestrator.engine.runner import RunRequest, RunServices, execute_run
from orchestrator.llm import timeouts_from_env
from orchestrator.service.app import create_app
from orchestrator.service.core import Service
from orchestrator.service.perimeter_rules import Policy
from orchestrator.service.stream import StreamLimits

__all__ = ["BEARER", "TOKEN", "InprocessServer", "Reply", "engine_run", "inprocess_app", "inprocess_server"]

TOKEN = "test-token-0123456789abcdef"
#: The header that signs a test client's request in.
BEARER = {"Authorization": f"Bearer {TOKEN}"}
ROLES = {"lead": ["agent", "finish"], "coder": ["run_shell", "finish"]}


async def engine_run(tmp_path: Path, script: Mapping[str, Any], roles: Mapping[str, list[str]]) -> str:
    """Run ``script`` (sim-model turns) with the real engine into ``tmp_path / "ws"`` — the workspace
    ``inprocess_app(tmp_path)`` serves — until it ends; the run's id. Files the run should find can be
    written into ``tmp_path / "ws"`` first."""
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    async with serve_script(script) as sim:
        settings = make_settings(tmp_path / "engine", sim.base_url, roles=roles)
        outcome = await execute_run(settings, workspace, RunRequest(task="go"), RunServices(timeouts=FAST))
    return outcome.run_dir.name


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@asynccontextmanager
async def inprocess_app(
    tmp_path: Path,
    *,
    policy: Policy | None = Policy(token=TOKEN),
    limits: StreamLimits | None = None,
    api_base: str | None = None,
) -> AsyncIterator[tuple[QuartTrio, QuartClient]]:
    """``api_base``: the model endpoint (a sim's) when runs should succeed; default a closed port."""
    settings = make_settings(tmp_path, api_base or f"http://127.0.0.1:{_closed_port()}/v1", roles=ROLES)
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    service = Service(settings, workspace)
    app = create_app(service, policy, limits)
    async with trio.open_nursery() as nursery:
        service.attach(nursery)
        async with app.test_app() as test_app:
            yield app, test_app.test_client()
            service.stopping.set()
        nursery.cancel_scope.cancel()


class Reply:
    """A test-client response read whole, with the attributes the tests read off an ``httpx.Response``."""

    def __init__(self, status_code: int, content: bytes, headers: Headers) -> None:
        self.status_code = status_code
        self.content = content
        self.headers = headers

    @property
    def text(self) -> str:
        return self.content.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.content)


class InprocessHttp:
    """httpx's request methods (``json=``, ``params=``, ``content=``, ``headers=``) over the test client,
    every request carrying the token."""

    def __init__(self, client: QuartClient) -> None:
        self._client = client

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: Mapping[str, Any] | None = None,
        content: bytes | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> Reply:
        extra: dict[str, Any] = {"json": json} if json is not None else {"data": content} if content else {}
        response = await self._client.open(
            path,
            method=method,
            headers={"Authorization": f"Bearer {TOKEN}", **(headers or {})},
            query_string={k: str(v) for k, v in (params or {}).items()},
            **extra,
        )
        return Reply(response.status_code, await response.get_data(as_text=False), response.headers)

    async def get(self, path: str, **kwargs: Any) -> Reply:
        return await self.request("GET", path, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> Reply:
        return await self.request("POST", path, **kwargs)

    async def put(self, path: str, **kwargs: Any) -> Reply:
        return await self.request("PUT", path, **kwargs)

    async def patch(self, path: str, **kwargs: Any) -> Reply:
        return await self.request("PATCH", path, **kwargs)

    async def delete(self, path: str, **kwargs: Any) -> Reply:
        return await self.request("DELETE", path, **kwargs)


class InprocessServer(ApiPolling):
    """The app and its ``Service`` in this process, with the polling helpers a real ``Server`` has."""

    def __init__(self, app: QuartTrio, service: Service, client: QuartClient) -> None:
        self.app = app
        self.service = service
        self.workspace = service.workspace
        self.http = InprocessHttp(client)


@asynccontextmanager
async def inprocess_server(
    tmp_path: Path,
    api_base: str,
    roles: Mapping[str, list[str]],
    *,
    env: Mapping[str, str] | None = None,
    **executor: Any,
) -> AsyncIterator[InprocessServer]:
    """A started ``Service`` (reconciled, ticked, as ``serve`` starts it) on a Guild of ``roles`` with the
    model at ``api_base``, behind the token perimeter; ``env`` reaches the settings (secrets), the LLM
    timeouts are ``serve``'s under the HTTP tests' environment; ``executor`` keys go into the deployment."""
    settings = make_settings(tmp_path, api_base, roles=roles, env=env, **executor)
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    service = Service(settings, workspace, timeouts=timeouts_from_env({**BASE_ENV, **(env or {})}))
    app = create_app(service, Policy(token=TOKEN))
    async with trio.open_nursery() as nursery:
        service.attach(nursery)
        async with app.test_app() as test_app:
            await service.start()
            yield InprocessServer(app, service, test_app.test_client())
            service.stopping.set()
        nursery.cancel_scope.cancel()
