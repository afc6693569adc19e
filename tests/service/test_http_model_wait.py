"""Fix E through a real ``orchestrator serve``: started before the model server, it picks it up once ready.

The model server here is the sim's llama-server flavor, started on a port chosen in advance and set to
answer ``503 Loading model`` for a while first, as llama-server does while it loads a model.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import trio
from tests.engine.harness import finish, turn
from tests.service.server import serve_process, write_config

from orchestrator.sim import load_script, serve_sim

ROLES = {"lead": ["agent", "finish"]}


async def _free_port() -> int:
    with trio.socket.socket() as sock:
        await sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _script(**flavor: Any) -> bytes:
    return json.dumps(
        {
            "contextWindow": 16384,
            "flavor": {"name": "llama-server", **flavor},
            "turns": [{**turn("lead", finish("the model was there")), "reusable": True}],
        }
    ).encode()


async def test_serve_without_model_fields_waits_on_the_error_page_then_starts(tmp_path: Path) -> None:
    port = await _free_port()
    api_base = f"http://127.0.0.1:{port}/v1"
    guild, deployment = write_config(tmp_path, api_base, ROLES)
    document = json.loads(deployment.read_text())
    del document["model"]["name"], document["model"]["contextWindow"]  # only the probe can tell
    deployment.write_text(json.dumps(document))
    async with serve_process(tmp_path, guild=guild, deployment=deployment) as server:
        page = await server.get("/")
        assert page.status_code == 503 and "waiting for the model server" in page.text
        assert f"No model server answers at <code>{api_base}</code>" in page.text
        assert '<meta http-equiv="refresh" content="5">' in page.text  # it waits and reloads by itself
        assert "restart the service" not in page.text and "docs/models.md" in page.text
        assert "booting on the configured values" not in page.text
        assert "deployment file: " + str(deployment) in page.text  # the file in use, not a generic name
        body = (await server.get("/api/config")).json()
        assert body["error"] == "model_not_ready"
        assert any("could not be probed" in p for p in body["problems"])
        first = server.stderr().splitlines()
        assert any(line.startswith(f"orchestrator: no model server answers at {api_base}") for line in first)
        assert any(line.startswith("orchestrator: open ") and f"?token={server.token}" in line for line in first)
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(serve_sim, load_script(_script(loadingMs=800)), port=port))

            async def ready() -> dict[str, Any] | None:
                try:
                    response = await server.get("/api/config")
                except httpx.HTTPError:
                    return None  # the error page has stopped and the service is binding the port
                return response.json() if response.status_code == 200 else None

            config = await server.wait_for(ready, seconds=40, what="the service to start")
            assert config["model"]["name"] == "/models/sim.gguf" and config["model"]["contextWindow"] == 16384
            assert config["modelStatus"]["reachable"] is True
            run_id = (await server.post("/api/runs", {"task": "anything"})).json()["runId"]
            view = await server.run_status(run_id, "success", "error")
            assert view["status"] == "success"
            nursery.cancel_scope.cancel()
        assert "the model server answered; starting the service" in server.stderr()


async def test_a_booted_service_reprobes_until_the_model_server_is_up(tmp_path: Path) -> None:
    port = await _free_port()
    guild, deployment = write_config(tmp_path, f"http://127.0.0.1:{port}/v1", ROLES)
    async with serve_process(tmp_path, guild=guild, deployment=deployment) as server:
        config = await server.json("/api/config")  # name and window configured: it boots
        assert config["modelStatus"]["reachable"] is False and "ConnectError" in config["modelStatus"]["message"]
        async with trio.open_nursery() as nursery:
            await nursery.start(partial(serve_sim, load_script(_script()), port=port))

            async def reachable() -> bool:
                status = (await server.json("/api/config"))["modelStatus"]
                return bool(status and status["reachable"])

            await server.wait_for(reachable, seconds=40, what="the background re-probe")
            nursery.cancel_scope.cancel()
