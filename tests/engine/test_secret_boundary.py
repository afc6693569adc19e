"""Secrets stay out of everything a run writes or sends: the real engine, real subprocesses, the real sim.

A run whose tools print the environment, ``cat`` a file holding the API key, echo an allow-listed
secret variable and fail with a secret in the error message leaves no secret value in ``log.jsonl``
or in any request the sim model received; what the tools saw is ``<redacted>`` instead.
"""

from __future__ import annotations

import json
import os
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from hypercorn.config import Config
from hypercorn.trio import serve
from quart import Response, request
from quart_trio import QuartTrio
from tests.engine.harness import FAST, call, finish, of_type, turn
from tests.helpers import write_deployment, write_guild

from orchestrator.config import Settings, load_settings
from orchestrator.config.secrets import Redactor
from orchestrator.conversation import ToolResult
from orchestrator.engine.runner import RunRequest, RunServices, execute_run
from orchestrator.runlog import read_events
from orchestrator.tools import ToolContext, default_native_tools, failure

SECRETS = {
    "ORCHESTRATOR_API_KEY": "sk-model-secret-0001",
    "ORCHESTRATOR_KAGI_API_KEY": "kagi-secret-0002",
    "ORCHESTRATOR_TOKEN": "service-token-0003",
    "MY_SERVICE_TOKEN": "ghp-allowed-0004",
    "DEPLOY_PASSWORD": "hunter2-hunter2",
}
WORKSPACE_TOKEN = "workspace-token-0005"
VALUES = [*SECRETS.values(), WORKSPACE_TOKEN]
ROLES = {"leaf": ["run_shell", "lookup", "test", "finish"]}


#: A host-supplied native tool whose failure message echoes a credential, as a careless HTTP library's
#: exception text might.
LOOKUP_MANIFEST = {
    "name": "lookup",
    "description": "Look a name up in the team's directory service.",
    "parameters": {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
        "additionalProperties": False,
    },
}


async def lookup(ctx: ToolContext, arguments: dict[str, Any]) -> ToolResult:
    kagi = os.environ["ORCHESTRATOR_KAGI_API_KEY"]
    return failure("unavailable", f"directory refused Authorization: Bearer {kagi}", {"header": kagi})


def _settings(directory: Path, api_base: str) -> Settings:
    guild = write_guild(directory / "guild", ROLES, extra_manifests={"lookup": LOOKUP_MANIFEST})
    deployment = write_deployment(directory / "deployment.json", api_base)
    env = {"ORCHESTRATOR_API_KEY": SECRETS["ORCHESTRATOR_API_KEY"]}
    return load_settings(guild, deployment, env, secrets_dir=directory / "no-secrets")


def _script() -> dict[str, object]:
    return {
        "turns": [
            turn("leaf", call("run_shell", command="env")),
            turn("leaf", call("run_shell", command="cat key.txt; cat .orchestration/token")),
            turn("leaf", call("run_shell", command="echo allowed=$MY_SERVICE_TOKEN")),
            turn("leaf", {"name": "lookup", "arguments": {"name": "weather"}}),
            turn("leaf", call("test", commands=["cat key.txt >&2; exit 4"])),
            turn("leaf", finish("looked around")),
        ]
    }


@pytest.fixture
def secret_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """This process's environment holds the secrets (tools inherit it); the workspace has a token file."""
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("ORCHESTRATOR_TOOL_ENV_ALLOW", "MY_SERVICE_TOKEN")
    workspace = tmp_path / "ws"
    (workspace / ".orchestration").mkdir(parents=True)
    (workspace / ".orchestration" / "token").write_text(WORKSPACE_TOKEN + "\n")
    (workspace / "key.txt").write_text(f"the key is {SECRETS['ORCHESTRATOR_API_KEY']}\n")
    return workspace


async def test_tool_output_and_errors_reach_neither_the_log_nor_the_model(secret_env: Path, sim_for) -> None:
    workspace = secret_env
    async with sim_for(_script()) as sim:
        settings = _settings(workspace.parent, sim.base_url)
        tools = {**default_native_tools(), "lookup": lookup}
        outcome = await execute_run(settings, workspace, RunRequest(task="look"), RunServices(FAST, tools))
        events = read_events(outcome.run_dir / "log.jsonl")
        requests = await sim.responses_requests()
    assert outcome.card.summary == "looked around"
    raw_log = (outcome.run_dir / "log.jsonl").read_text()
    sent = json.dumps([r["body"] for r in requests])
    for value in VALUES:
        assert value not in raw_log, value
        assert value not in sent, value

    results = [e["result"] for e in of_type(events, "tool_result")]
    env_out = results[0]["data"]["stdout"]
    # Stripped from the subprocess: the orchestrator's secrets and every secret-looking name.
    for name in ("ORCHESTRATOR_API_KEY=", "ORCHESTRATOR_KAGI_API_KEY=", "ORCHESTRATOR_TOKEN=", "DEPLOY_PASSWORD="):
        assert name not in env_out
    # Allow-listed: the tool saw it, but its value is redacted where the output enters the run.
    assert "MY_SERVICE_TOKEN=<redacted>" in env_out
    assert results[1]["data"]["stdout"] == "the key is <redacted>\n<redacted>\n"
    assert results[2]["data"]["stdout"] == "allowed=<redacted>\n"
    assert results[3] == {
        "kind": "unavailable",
        "message": "directory refused Authorization: Bearer <redacted>",
        "details": {"header": "<redacted>"},
    }
    assert results[4]["data"][0]["stderr"] == "the key is <redacted>\n" and results[4]["data"][0]["exitCode"] == 4
    # The next model request carried the redacted text, paired with its call.
    assert "MY_SERVICE_TOKEN=<redacted>" in sent and "Bearer <redacted>" in sent
    outputs = [i["output"] for i in requests[2]["body"]["input"] if i["type"] == "function_call_output"]
    assert "the key is <redacted>" in outputs[-1]


async def test_the_log_writer_scrubs_a_secret_from_any_other_source(secret_env: Path, sim_for) -> None:
    """A secret typed into the task never reaches log.jsonl (the second line: the writer itself)."""
    workspace = secret_env
    async with sim_for({"turns": [turn("leaf", finish("ok"))]}) as sim:
        settings = _settings(workspace.parent, sim.base_url)
        services = RunServices(timeouts=FAST, redactor=Redactor(["task-secret-0006"]))
        request = RunRequest(task="deploy with task-secret-0006 please")
        outcome = await execute_run(settings, workspace, request, services)
    raw_log = (outcome.run_dir / "log.jsonl").read_text()
    assert "task-secret-0006" not in raw_log and "deploy with <redacted> please" in raw_log


async def test_an_endpoint_echoing_the_key_in_its_error_leaves_it_nowhere(secret_env: Path) -> None:
    """A model server that quotes the Authorization header it was sent in a 401: the result card, the
    meta the API serves and the log say ``<redacted>``."""
    app = QuartTrio(__name__)

    @app.post("/v1/responses")
    async def refuse() -> Response:
        return Response(f"invalid credentials: {request.headers.get('Authorization')}", status=401)

    config = Config()
    config.bind = ["127.0.0.1:0"]
    config.accesslog = None
    config.graceful_timeout = 0.2
    workspace = secret_env
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(partial(serve, app, config, shutdown_trigger=trio.Event().wait))
        settings = _settings(workspace.parent, f"{binds[0]}/v1")
        outcome = await execute_run(settings, workspace, RunRequest(task="hello"), RunServices(FAST))
        nursery.cancel_scope.cancel()
    key = SECRETS["ORCHESTRATOR_API_KEY"]
    assert outcome.card.error is not None and outcome.card.error.kind == "llm_unavailable"
    assert "invalid credentials: Bearer <redacted>" in outcome.card.summary
    for name in ("meta.json", "log.jsonl"):
        text = (outcome.run_dir / name).read_text()
        assert key not in text and "Bearer <redacted>" in text, name
