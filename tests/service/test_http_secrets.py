"""Secrets against a real ``orchestrator serve``: a run whose tools print the environment and echo a
secret leaves no secret in ``log.jsonl``, in any API answer or in any model request; secrets known only
by value (``DATABASE_URL``, ``MYSQL_PWD``, ``SENTRY_DSN``, an unnamed variable) are withheld from tools and
found in no file, answer or request, typed into tasks included; a key placed in a wrong variable is not
echoed by the error page, its JSON or the server's stderr, nor the model's userinfo by the waiting page."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.engine.harness import call, finish, turn
from tests.helpers import serve_script, write_deployment, write_guild
from tests.service.server import Server, serve_process, write_config

from orchestrator.config.secrets import BASE_TOOL_ENVIRONMENT

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


async def _every_answer(server: Server, run_id: str, *, events_at_least: int = 10) -> list[str]:
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
    assert flow["operations"] and len(bodies) > len(paths) + events_at_least
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


# --- secrets by value: variables whose names say nothing ------------------------------------------------

#: Fake secrets as a deployment's environment holds them; only GH_PAT's name or shape gives it away.
BY_VALUE = {
    "GH_PAT": "ghp_" + "Zx9Yw8Vu7T" * 4,
    "DATABASE_URL": "postgres://u:pa55w0rd-xyz@h/db",
    "MYSQL_PWD": "my5ql-pa55-7781",
    "SENTRY_DSN": "https://4f1c2e9a77b0d3c5@o1.ingest.sentry.io/5",
    "BUILD_SIGNING_SEED": "Qm9v-seed-5512-zz",  # no name pattern, no shape: withheld, so its value is secret
}
#: What must appear nowhere (the parts of the URLs that are the secrets, and the values whole).
NEEDLES = [*BY_VALUE.values(), "pa55w0rd-xyz", "4f1c2e9a77b0d3c5"]
#: What ``sh`` adds to any environment by itself.
SHELL_OWN = {"PWD", "SHLVL", "_", "OLDPWD"}


def _by_value_script() -> dict[str, object]:
    return {
        "turns": [
            turn("lead", call("run_shell", command="env")),
            turn("lead", call("run_shell", command="tr '\\0' '\\n' < /proc/$PPID/environ")),
            turn("lead", call("run_shell", command="cat notes.txt")),
            turn("lead", finish("looked")),
            turn("lead", finish("second task done")),
        ]
    }


def _scan(texts: dict[str, str]) -> list[tuple[str, str]]:
    """Every (place, needle) where a fake secret shows."""
    return [(place, needle) for place, text in texts.items() for needle in NEEDLES if needle in text]


async def test_secrets_known_only_by_value_reach_no_file_answer_request_or_tool(tmp_path: Path) -> None:
    """``GH_PAT``, ``DATABASE_URL``, ``MYSQL_PWD``, ``SENTRY_DSN`` and an unnamed variable: withheld from
    the tool (``env``), redacted where the tool reads them anyway (``/proc/$PPID/environ``, a file), typed
    into a run's task and a queued task — and found in no file the runs wrote, no API answer and no
    model request."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(f"db: {BY_VALUE['DATABASE_URL']}\nsentry: {BY_VALUE['SENTRY_DSN']}\n")
    typed = f"deploy with {BY_VALUE['GH_PAT']} and password pa55w0rd-xyz"
    async with serve_script(_by_value_script()) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, {"lead": ["run_shell", "finish"]})
        async with serve_process(tmp_path, guild=guild, deployment=deployment, env=BY_VALUE) as server:
            run_id = (await server.post("/api/runs", {"task": typed})).json()["runId"]
            await server.run_status(run_id, "success")
            queued = (await server.post("/api/queue", {"task": f"again: {BY_VALUE['MYSQL_PWD']}"})).json()
            assert queued["task"] == "again: <redacted>"
            second = (await server.item_status(queued["id"], "done"))["runId"]
            await server.run_status(second, "success")
            answers = {f"answer {n}": text for n, text in enumerate(await _every_answer(server, run_id))}
            answers |= {
                f"answer second {n}": text
                for n, text in enumerate(await _every_answer(server, second, events_at_least=2))
            }
            events = await server.events(run_id)
        requests = await sim.responses_requests()
    files = {
        str(path.relative_to(workspace)): path.read_text(errors="replace")
        for path in (workspace / ".orchestration").rglob("*")
        if path.is_file()
    }
    assert {f"runs/{run_id}/log.jsonl", f"runs/{run_id}/meta.json", "queue.json"} <= {
        name.removeprefix(".orchestration/") for name in files
    }
    sent = {f"request {n}": json.dumps(r["body"]) for n, r in enumerate(requests)}
    assert _scan(files) == [] and _scan(answers) == [] and _scan(sent) == []
    meta = json.loads(files[f".orchestration/runs/{run_id}/meta.json"])
    assert meta["task"] == "deploy with <redacted> and password <redacted>"
    outputs = [
        e["payload"]["result"]["data"]["stdout"]
        for e in events
        if e["type"] == "tool_result" and e["payload"]["tool"] == "run_shell"
    ]
    names = {line.split("=", 1)[0] for line in outputs[0].splitlines() if "=" in line}
    assert "PATH" in names and not names & set(BY_VALUE)  # the tool never had them
    assert names <= BASE_TOOL_ENVIRONMENT | SHELL_OWN | {n for n in names if n.startswith("LC_")}
    assert "GH_PAT=<redacted>" in outputs[1] and "DATABASE_URL=<redacted>" in outputs[1]  # read from /proc
    assert outputs[2] == "db: <redacted>\nsentry: <redacted>\n"
    assert "db: <redacted>" in " ".join(sent.values())  # the model got the redacted text, not nothing


async def test_the_waiting_page_and_its_json_show_no_userinfo_of_the_api_base(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on: the service waits for its model server
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    guild, deployment = write_config(tmp_path, f"http://modeluser:pa55w0rd-xyz@127.0.0.1:{port}/v1", ROLES)
    document = json.loads(deployment.read_text())
    del document["model"]["name"], document["model"]["contextWindow"]  # only the probe can tell
    deployment.write_text(json.dumps(document))
    async with serve_process(tmp_path, guild=guild, deployment=deployment) as server:
        page = await server.get("/")
        assert page.status_code == 503 and "waiting for the model server" in page.text
        assert f"<code>http://127.0.0.1:{port}/v1</code>" in page.text
        answer = await server.get("/api/config")
        assert answer.json()["error"] == "model_not_ready"
        for text in (page.text, answer.text, server.stderr()):
            assert "pa55w0rd-xyz" not in text and "modeluser" not in text
