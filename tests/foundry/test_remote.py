"""``--server``: the runner drives a real ``orchestrator serve`` process over HTTP.

The service runs the ask benchmark on the sim: the orchestrator's question comes before anything was
written, so the queue-dispatched run parks; the runner answers the parked item from ``humanResponses``
and follows the continuation run to a pass.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import trio
from tests.helpers import REPO, serve_script, write_deployment

from orchestrator.foundry.remote import MARKER, ServiceError, answer_for, claim_service_workspace, service_token
from orchestrator.foundry.runner import SuiteOptions, run_suite
from orchestrator.runlog import read_events
from orchestrator.service.token import resolve_token

HERE = Path(__file__).resolve().parent
BENCHMARKS = HERE.parents[1] / "benchmarks"


@asynccontextmanager
async def serve_process(directory: Path, *, guild: Path, deployment: Path, workspace: Path) -> AsyncIterator[str]:
    """``orchestrator serve`` on a free port; yields its base URL and always kills it afterwards."""
    workspace.mkdir(parents=True, exist_ok=True)
    port_file, log = directory / "serve.port", directory / "serve.log"
    argv = [sys.executable, "-m", "orchestrator", "serve", "--workspace", str(workspace), "--port", "0"]
    argv += ["--port-file", str(port_file), "--guild", str(guild), "--deployment", str(deployment)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    with log.open("wb") as sink:
        process = await trio.lowlevel.open_process(argv, env=env, cwd=REPO, stdout=sink, stderr=sink)
    try:
        with trio.move_on_after(30):
            while True:
                if port_file.exists() or process.poll() is not None:
                    break
                await trio.sleep(0.05)
        assert port_file.exists(), f"serve did not start:\n{log.read_text(errors='replace')}"
        yield f"http://127.0.0.1:{int(port_file.read_text())}"
    finally:
        process.kill()
        with trio.move_on_after(10):
            await process.wait()


async def test_a_parked_question_is_answered_through_the_queue(tmp_path: Path) -> None:
    script = json.loads((BENCHMARKS / "ask_report_file_name" / "sim-solution.json").read_text())
    async with serve_script(script) as sim:
        deployment = write_deployment(tmp_path / "deployment.json", sim.base_url)
        workspace = tmp_path / "ws"
        async with serve_process(tmp_path, guild=HERE / "guild", deployment=deployment, workspace=workspace) as server:
            options = SuiteOptions(
                suite=BENCHMARKS,
                guild_dir=tmp_path / "not-the-services-guild",
                deployment_file=deployment,
                env=dict(os.environ),
                only=["ask_report_file_name"],
                server=server,
                server_workspace=workspace,
                out=tmp_path / "out",
            )
            summary, _ = await run_suite(options, progress_stream=None)
            token = (workspace / ".orchestration" / "token").read_text().strip()  # what the runner used too
            async with httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}) as client:
                queue = (await client.get(f"{server}/api/queue")).json()

    [result] = summary.results
    assert result.status == "pass", result.reasons
    runs = sorted(p.name for p in (workspace / ".orchestration" / "runs").iterdir())
    assert len(runs) == 2 and result.run_id == runs[1]
    first, second = (read_events(workspace / ".orchestration" / "runs" / r / "log.jsonl") for r in runs)
    assert [e["payload"]["question"] for e in first if e["type"] == "ask_human"] == [
        "Which file name should the total be written to?"
    ]
    assert not any(e["type"] == "ask_human" for e in second)
    assert [item["status"] for item in queue] == ["done"]
    assert queue[0]["answer"] == "Write it to total.txt in the workspace root."
    assert result.prompt_tokens > 0
    assert summary.guild_path == str(HERE / "guild")  # what the service's run metas say
    # The workspace was emptied again; the run history stays.
    assert sorted(p.name for p in workspace.iterdir()) == sorted([".orchestration", MARKER])
    assert (tmp_path / "out" / "ask_report_file_name" / "runs" / runs[0] / "log.jsonl").is_file()


def test_answers_match_near_exactly() -> None:
    responses = {"Which file name should I use?": "out.txt"}
    assert answer_for(responses, "  which FILE name   should I use? ") == "out.txt"
    assert answer_for(responses, "Which file should I use?").startswith("No answer is available")


def test_the_token_comes_from_the_environment_or_the_services_workspace(tmp_path: Path) -> None:
    with pytest.raises(ServiceError, match="ORCHESTRATOR_TOKEN"):
        service_token({}, tmp_path)
    assert service_token({"ORCHESTRATOR_TOKEN": "given"}, tmp_path) == "given"
    written = resolve_token(tmp_path, {}).token  # what `serve` creates in its workspace
    assert service_token({}, tmp_path) == written


def test_only_an_empty_or_marked_workspace_is_claimed(tmp_path: Path) -> None:
    claim_service_workspace(tmp_path)
    assert (tmp_path / MARKER).is_file()
    (tmp_path / "left-over.txt").write_text("from an earlier benchmark")
    claim_service_workspace(tmp_path)  # marked: ours to empty
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "precious.txt").write_text("keep me")
    with pytest.raises(ServiceError, match=r"holds files the runner did not put there \(precious.txt\)"):
        claim_service_workspace(foreign)
    with pytest.raises(ServiceError, match="not a directory"):
        claim_service_workspace(tmp_path / "missing")
