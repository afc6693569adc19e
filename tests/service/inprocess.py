"""The app in-process, behind Quart-Trio's test client, for route logic and the perimeter's rules.

``inprocess_app(tmp_path, policy=...)`` builds a ``Service`` on a test Guild whose model endpoint is a
closed loopback port (a run that starts fails fast; none is needed), attaches it to a nursery, runs the
app's lifespan and yields ``(app, client)``. What crosses a real socket (Hypercorn, browsers) is tested
against a real ``serve`` process elsewhere.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio
from quart.testing import QuartClient
from quart_trio import QuartTrio
from tests.helpers import make_settings

from orchestrator.service.app import create_app
from orchestrator.service.core import Service
from orchestrator.service.perimeter_rules import Policy
from orchestrator.service.stream import StreamLimits

__all__ = ["TOKEN", "inprocess_app"]

TOKEN = "test-token-0123456789abcdef"
ROLES = {"lead": ["agent", "finish"], "coder": ["run_shell", "finish"]}


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
