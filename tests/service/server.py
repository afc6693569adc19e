"""A real ``orchestrator serve`` process on a free loopback port, for the HTTP tests.

``serve_process(...)`` starts ``python -m orchestrator serve --port 0 --port-file F`` with a test Guild
and a deployment pointing at the in-process sim, waits (bounded) for the port file, and always kills
the process on the way out. ``Server`` wraps an ``httpx.AsyncClient`` plus condition polling helpers.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx
import trio
from tests.helpers import REPO, write_deployment, write_guild

T = TypeVar("T")

#: How long a server may take to write its port file.
START_SECONDS = 20.0
#: The default bound on a condition poll.
WAIT_SECONDS = 20.0
#: Quick failure paths: short backoff; stall bounds stay generous unless a test lowers them.
BASE_ENV: dict[str, str] = {
    "ORCHESTRATOR_LLM_BACKOFF_SECONDS": "0.01",
    "ORCHESTRATOR_STALL_HEADERS_SECONDS": "20",
    "ORCHESTRATOR_STALL_IDLE_SECONDS": "20",
}


def write_config(directory: Path, api_base: str, roles: Mapping[str, list[str]], **executor: Any) -> tuple[Path, Path]:
    """The Guild and deployment files for a server (``executor`` keys go into the deployment)."""
    guild = write_guild(directory / "guild", roles)
    deployment = write_deployment(directory / "deployment.json", api_base, **executor)
    return guild, deployment


class ApiPolling:
    """The API helpers a test uses on a service, over any ``http`` client with httpx's request methods
    (a real socket: ``Server``; the in-process app: ``tests.service.inprocess.InprocessServer``)."""

    http: Any
    workspace: Path

    def alive(self) -> bool:
        """Whether the service can still answer (polls stop early when it cannot)."""
        return True

    def diagnostics(self) -> str:
        """What a timed-out poll reports."""
        return ""

    async def get(self, path: str, **kwargs: Any) -> Any:
        return await self.http.get(path, **kwargs)

    async def post(self, path: str, body: Any = None, **kwargs: Any) -> Any:
        if body is not None:
            kwargs["json"] = body
        return await self.http.post(path, **kwargs)

    async def json(self, path: str, **kwargs: Any) -> Any:
        response = await self.http.get(path, **kwargs)
        assert response.status_code == 200, (path, response.status_code, response.text)
        return response.json()

    async def wait_for(
        self, probe: Callable[[], Awaitable[T | None]], *, seconds: float = WAIT_SECONDS, what: str = "condition"
    ) -> T:
        """Poll ``probe`` until it returns something truthy (bounded); fail with the server's diagnostics."""
        with trio.move_on_after(seconds):
            while True:
                value = await probe()
                if value:
                    return value
                if not self.alive():
                    break
                await trio.sleep(0.03)
        raise AssertionError(f"timed out waiting for {what}; {self.diagnostics()}")

    async def run_status(self, run_id: str, *statuses: str, seconds: float = WAIT_SECONDS) -> dict[str, Any]:
        """Wait until the run view's status is one of ``statuses``; return the view."""

        async def probe() -> dict[str, Any] | None:
            response = await self.http.get(f"/api/runs/{run_id}")
            view = response.json() if response.status_code == 200 else None
            return view if view is not None and view["status"] in statuses else None

        return await self.wait_for(probe, seconds=seconds, what=f"{run_id} to reach {statuses}")

    async def idle(self, seconds: float = WAIT_SECONDS) -> None:
        """Wait until no queue item is waiting or active (every dispatched run settled)."""

        async def probe() -> bool:
            items = (await self.http.get("/api/queue")).json()
            return not any(i["status"] in ("waiting", "active") for i in items)

        await self.wait_for(probe, seconds=seconds, what="the queue to settle")

    async def queue_item(self, item_id: str) -> dict[str, Any]:
        items = (await self.http.get("/api/queue")).json()
        return next(i for i in items if i["id"] == item_id)

    async def item_status(self, item_id: str, *statuses: str, seconds: float = WAIT_SECONDS) -> dict[str, Any]:
        async def probe() -> dict[str, Any] | None:
            item = await self.queue_item(item_id)
            return item if item["status"] in statuses else None

        return await self.wait_for(probe, seconds=seconds, what=f"item {item_id} to reach {statuses}")

    async def events(self, run_id: str) -> list[dict[str, Any]]:
        """Every event of the run's log (paged through the window endpoint)."""
        events: list[dict[str, Any]] = []
        while True:
            page = await self.json(f"/api/runs/{run_id}/log", params={"offset": len(events), "limit": 500})
            events += page["events"]
            if len(events) >= page["total"] or not page["events"]:
                return events

    async def questions(self) -> list[dict[str, Any]]:
        return await self.json("/api/questions")


class Server(ApiPolling):
    """A running ``orchestrator serve``: its process, base URL, workspace, and an HTTP client."""

    def __init__(self, process: trio.Process, base_url: str, workspace: Path, stderr_path: Path, token: str) -> None:
        self.process = process
        self.base_url = base_url
        self.ws_url = base_url.replace("http://", "ws://", 1) + "/ws/stream"
        self.workspace = workspace
        self.stderr_path = stderr_path
        self.token = token
        #: what every authenticated request carries (the WebSocket handshake too: ``extra_headers=``)
        self.auth_headers = [("Authorization", f"Bearer {token}")]
        self.http = httpx.AsyncClient(base_url=base_url, timeout=20, headers=dict(self.auth_headers))

    def stderr(self) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def alive(self) -> bool:
        return self.process.returncode is None

    def diagnostics(self) -> str:
        return f"server stderr:\n{self.stderr()[-4000:]}"

    async def stop(self, sig: int = signal.SIGTERM, seconds: float = 30.0) -> int:
        """Signal the server and wait (bounded) for it to exit; its exit code."""
        await self.http.aclose()
        self.process.send_signal(sig)
        with trio.fail_after(seconds):
            return await self.process.wait()


def child_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    env.update(BASE_ENV)
    env.update(extra or {})
    return env


@asynccontextmanager
async def serve_process(
    directory: Path,
    *,
    guild: Path | None,
    deployment: Path | None,
    workspace: Path | None = None,
    env: Mapping[str, str] | None = None,
    name: str = "server",
    refused: bool = False,
) -> AsyncIterator[Server]:
    """Start ``orchestrator serve`` (workspace ``directory/ws`` unless given) and yield it once its port
    file exists; the process is killed on exit unless the block already stopped it. ``guild`` or
    ``deployment`` ``None``: no flag (the workspace's own copy, if trusted, else the packaged one).
    ``refused``: the configuration is expected to be refused (the error page is served, no token is read)."""
    workspace = workspace or directory / "ws"
    workspace.mkdir(parents=True, exist_ok=True)
    port_file = directory / f"{name}.port"
    port_file.unlink(missing_ok=True)
    stderr_path = directory / f"{name}.stderr"
    args = [
        sys.executable,
        "-m",
        "orchestrator",
        "serve",
        "--workspace",
        str(workspace),
        "--port",
        "0",
        "--port-file",
        str(port_file),
        *(["--guild", str(guild)] if guild is not None else []),
        *(["--deployment", str(deployment)] if deployment is not None else []),
    ]
    with stderr_path.open("wb") as stderr:
        process = await trio.lowlevel.open_process(
            args, env=child_env(env), cwd=REPO, stdin=None, stdout=stderr, stderr=stderr
        )
    server: Server | None = None
    try:
        with trio.move_on_after(START_SECONDS):
            while not port_file.exists() and process.poll() is None:  # noqa: ASYNC110 (a file, no event)
                await trio.sleep(0.03)
        if not port_file.exists():
            text = stderr_path.read_text(errors="replace")
            raise AssertionError(f"serve did not write its port file (exit {process.returncode}):\n{text}")
        port = int(port_file.read_text())
        token = "refused-no-token" if refused else server_token(workspace, env)
        server = Server(process, f"http://127.0.0.1:{port}", workspace, stderr_path, token)
        yield server
    finally:
        if server is not None:
            await server.http.aclose()
        if process.returncode is None:
            process.kill()
            with trio.move_on_after(10):
                await process.wait()


def server_token(workspace: Path, env: Mapping[str, str] | None = None) -> str:
    """The token a server on ``workspace`` requires: ``ORCHESTRATOR_TOKEN`` when the test set it, else the
    token file the server created (read as the product's users do, via the file)."""
    configured = (env or {}).get("ORCHESTRATOR_TOKEN")
    if configured:
        return configured
    if (env or {}).get("ORCHESTRATOR_NO_TOKEN") == "1":
        return "token-is-off"
    return (workspace / ".orchestration" / "token").read_text().strip()


def queue_file(workspace: Path) -> Any:
    path = workspace / ".orchestration" / "queue.json"
    return json.loads(path.read_text()) if path.exists() else None
