"""Secrets against a real ``orchestrator serve``: a run whose tools print the environment and echo a
secret leaves no secret in ``log.jsonl``, in any API answer or in any model request; a key placed in a
wrong variable is not echoed by the error page, its JSON or the server's stderr."""

from __future__ import annotations

import json
from pathlib import Path

from tests.engine.harness import call, finish, turn
from tests.helpers import serve_script, write_deployment, write_guild
from tests.service.server import Server, serve_process, write_config

ROLES = {"lead": ["agent", "finish"], "coder": ["run_shell", "finish"]}
SECRETS = {
    "ORCHESTRATOR_API_KEY": "sk-served-model-key-7001",
    "ORCHESTRATOR_KAGI_API_KEY": "kagi-served-key-7002",
    "DEPLOY_PASSWORD": "served-password-7003",
    "MY_SERVICE_TOKEN": "served-allowed-token-7004",
}


def _script() -> dict[str, object]:
    return {
        "turns": [
            turn("lead", call("agent", role="coder", task="inspect the machine")),
            turn("coder", call("run_shell", command="env")),
            turn("coder", call("run_shell", command="cat key.txt; echo allowed=$MY_SERVICE_TOKEN")),
            turn("coder", finish("inspected")),
            turn("lead", finish("all done"), last="inspected"),
        ]
    }


async def _every_answer(server: Server, run_id: str) -> list[str]:
    """The body of every read route for the run (and the service-wide ones), as text."""
    paths = [
        "/api/runs",
        f"/api/runs/{run_id}",
        "/api/run",
        f"/api/runs/{run_id}/flow",
        "/api/run/flow",
        f"/api/runs/{run_id}/log?limit=500",
        f"/api/runs/{run_id}/log?format=text",
        "/api/queue",
        "/api/questions",
        "/api/config",
        "/api/settings",
    ]
    bodies = []
    for path in paths:
        response = await server.get(path)
        assert response.status_code == 200, (path, response.status_code)
        bodies.append(response.text)
    events = (await server.json(f"/api/runs/{run_id}/log", params={"limit": 500}))["events"]
    for index in range(len(events)):  # every event's folded detail (llm_call requests rebuilt whole)
        response = await server.get(f"/api/runs/{run_id}/log", params={"detail": index})
        if response.status_code == 200:
            bodies.append(response.text)
    flow = await server.json(f"/api/runs/{run_id}/flow")
    assert flow["operations"] and len(bodies) > len(paths) + 10
    for operation in flow["operations"]:
        response = await server.get(f"/api/runs/{run_id}/flow", params={"operation": operation["id"]})
        bodies.append(response.text)
    return bodies


async def test_a_run_printing_the_environment_leaks_no_secret_anywhere(tmp_path: Path) -> None:
    env = {**SECRETS, "ORCHESTRATOR_TOOL_ENV_ALLOW": "MY_SERVICE_TOKEN"}
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "key.txt").write_text(f"kagi={SECRETS['ORCHESTRATOR_KAGI_API_KEY']}\n")
    async with serve_script(_script()) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        async with serve_process(tmp_path, guild=guild, deployment=deployment, env=env) as server:
            run_id = (await server.post("/api/runs", {"task": "look around"})).json()["runId"]
            view = await server.run_status(run_id, "success")
            assert view["status"] == "success"
            answers = await _every_answer(server, run_id)
            events = await server.events(run_id)
        requests = await sim.responses_requests()
    assert len(answers) > 11
    sent = json.dumps([r["body"] for r in requests])
    raw_log = (workspace / ".orchestration" / "runs" / run_id / "log.jsonl").read_text()
    for value in SECRETS.values():
        assert value not in raw_log, value
        assert value not in sent, value
        assert all(value not in answer for answer in answers), value
    shell = [
        e["payload"]["result"] for e in events if e["type"] == "tool_result" and e["payload"]["tool"] == "run_shell"
    ]
    outputs = [result["data"]["stdout"] for result in shell]
    assert "PATH=" in outputs[0] and "MY_SERVICE_TOKEN=<redacted>" in outputs[0]
    for name in ("ORCHESTRATOR_API_KEY=", "ORCHESTRATOR_KAGI_API_KEY=", "DEPLOY_PASSWORD="):
        assert name not in outputs[0]
    assert outputs[1] == "kagi=<redacted>\nallowed=<redacted>\n"
    assert "allowed=<redacted>" in sent  # the model got the redacted output, not nothing


async def test_the_kagi_key_in_a_wrong_variable_is_not_echoed_by_the_error_page(tmp_path: Path) -> None:
    kagi = SECRETS["ORCHESTRATOR_KAGI_API_KEY"]
    guild = write_guild(tmp_path / "guild", ROLES)
    deployment = write_deployment(tmp_path / "deployment.json", "http://127.0.0.1:9/v1")
    cases = [
        ({"ORCHESTRATOR_KAGI_API_KEY": kagi, "ORCHESTRATOR_MAX_AGENT_DEPTH": kagi}, "executor.maxAgentDepth"),
        # Checked after the settings load, by another module: scrubbed where the page is rendered.
        ({"ORCHESTRATOR_KAGI_API_KEY": kagi, "ORCHESTRATOR_STALL_IDLE_SECONDS": kagi}, "ORCHESTRATOR_STALL_IDLE"),
    ]
    for number, (env, named) in enumerate(cases):
        async with serve_process(tmp_path, guild=guild, deployment=deployment, env=env, name=f"bad{number}") as server:
            page = await server.get("/")
            assert page.status_code == 503 and named in page.text and "&lt;redacted&gt;" in page.text
            api = await server.get("/api/runs")
            assert api.status_code == 503 and named in api.text and "<redacted>" in api.text
            assert kagi not in page.text and kagi not in api.text
            assert await server.stop() == 2
        assert named in server.stderr() and kagi not in server.stderr()


async def test_the_config_answer_never_shows_a_secret_used_as_a_setting(tmp_path: Path) -> None:
    kagi = SECRETS["ORCHESTRATOR_KAGI_API_KEY"]
    async with serve_script({"turns": []}) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        env = {"ORCHESTRATOR_KAGI_API_KEY": kagi, "ORCHESTRATOR_MODEL": kagi}
        async with serve_process(tmp_path, guild=guild, deployment=deployment, env=env) as server:
            config = await server.get("/api/config")
            assert config.status_code == 200 and kagi not in config.text
            assert config.json()["model"]["name"] == "<redacted>"
        assert kagi not in server.stderr()  # the startup notes ("ORCHESTRATOR_MODEL overrides …") too
