"""``orchestrator mcp --face runs`` through the official MCP client, driving a real ``orchestrator serve``.

The face is the real subprocess on stdio; the service is the real ``serve`` process (tests/service/server.py)
running the Guild on the sim model. Nothing in between is mocked.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from tests.engine.harness import call, finish, turn
from tests.helpers import REPO, SLEEPER, process_gone
from tests.service.server import serve_process, write_config

TOOLS = {"submit_task", "run_status", "run_result", "answer_question", "interrupt", "stop_run", "list_runs"}


@asynccontextmanager
async def runs_face(
    server_url: str, workspace: Path, env: Mapping[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "orchestrator", "mcp", "--face", "runs", "--server", server_url, "--workspace", str(workspace)],
        env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO / "src"), **dict(env or {})},
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def tool(session: ClientSession, name: str, **arguments: Any) -> tuple[bool, Any]:
    """``(is_error, parsed answer or error text)``."""
    result = await session.call_tool(name, arguments)
    text = "".join(getattr(block, "text", "") for block in result.content)
    if result.is_error:
        return True, text
    structured = result.structured_content
    if isinstance(structured, dict) and set(structured) == {"result"}:
        structured = structured["result"]
    return False, structured if structured is not None else json.loads(text)


async def poll(session: ClientSession, name: str, done: Any, *, seconds: float = 30.0, **arguments: Any) -> Any:
    answer: Any = None
    with trio.move_on_after(seconds):
        while True:
            is_error, answer = await tool(session, name, **arguments)
            assert not is_error, answer
            if done(answer):
                return answer
            await trio.sleep(0.05)
    raise AssertionError(f"{name} never reached the condition; last answer: {answer}")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_with_no_service_every_tool_says_so(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}"
    calls = {
        "submit_task": {"task": "x"},
        "run_status": {},
        "run_result": {"run_id": "run-20260101-000000"},
        "answer_question": {"answer": "yes"},
        "interrupt": {"run_id": "run-20260101-000000", "kind": "inquiry", "message": "how is it going?"},
        "stop_run": {"run_id": "run-20260101-000000"},
        "list_runs": {},
    }
    async with runs_face(url, tmp_path) as session:
        listed = {t.name for t in (await session.list_tools()).tools}
        answers = {name: await tool(session, name, **arguments) for name, arguments in calls.items()}
    assert listed == TOOLS
    for name, (is_error, text) in answers.items():
        assert is_error, name
        assert f"no orchestrator service is reachable at {url}" in text, (name, text)


async def test_delegate_while_busy_answer_a_waiting_question_and_read_the_card(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("ask_human", question="Which colour should the shed be?")),
            turn("lead", finish("painted the shed blue"), last="blue"),
            turn("lead", finish("second task done")),
        ]
    }
    # write_file makes the lead a writing role, so its question waits in the run (GET /api/questions).
    async with sim_for(script) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, {"lead": ["finish", "ask_human", "write_file"]})
        async with (
            serve_process(tmp_path, guild=guild, deployment=deployment) as server,
            runs_face(server.base_url, server.workspace) as session,
        ):
            is_error, submitted = await tool(session, "submit_task", task="paint the shed", effort="quick")
            assert not is_error, submitted
            run_id = submitted["runId"]
            waiting = await poll(session, "run_status", lambda a: a.get("pendingQuestions"), run_id=run_id)
            early = await tool(session, "run_result", run_id=run_id)
            is_error, queued = await tool(session, "submit_task", task="a second task")
            assert not is_error, queued
            is_error, answered = await tool(session, "answer_question", answer="blue")
            assert not is_error, answered
            await poll(session, "run_status", lambda a: a["status"] == "success", run_id=run_id)
            _, result = await tool(session, "run_result", run_id=run_id)
            second = await poll(
                session, "run_status", lambda a: a.get("queueStatus") == "done", run_id=queued["queueId"]
            )
            _, listing = await tool(session, "list_runs")
            _, detailed = await tool(session, "list_runs", detail=True, limit=1)
            late = await tool(session, "interrupt", run_id=run_id, kind="inquiry", message="still there?")
            bad_kind = await tool(session, "interrupt", run_id=run_id, kind="shout", message="x")
    assert waiting["status"] == "running" and waiting["task"] == "paint the shed"
    assert waiting["pendingQuestions"][0]["question"] == "Which colour should the shed be?"
    assert waiting["currentRole"]["role"] == "lead" and waiting["lastEvents"]
    assert early == (
        False,
        {"runId": run_id, "status": "running", "card": None, "note": "not finished yet; poll run_status"},
    )
    assert queued["queueId"] and "queued" in queued["note"]
    assert answered["ok"] and answered["questionId"] == waiting["pendingQuestions"][0]["id"]
    assert result["status"] == "success" and result["card"]["summary"] == "painted the shed blue"
    assert second["run"]["status"] == "success"
    assert len(listing["runs"]) == 2 and run_id in [r["runId"] for r in listing["runs"]] and listing["queue"] == []
    compact = next(r for r in listing["runs"] if r["runId"] == run_id)  # the compact list: five facts a run
    assert set(compact) == {"runId", "status", "task", "started", "durationSeconds"}
    assert compact["task"] == "paint the shed" and compact["status"] == "success" and compact["durationSeconds"] >= 0
    (whole,) = detailed["runs"]  # detail: the whole records
    assert whole["result"]["summary"] and "endTime" in whole
    assert late[0] and "run_not_active" in late[1]
    assert bad_kind[0] and "kind" in bad_kind[1]


async def test_a_run_that_stops_to_ask_is_answered_through_the_queue(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("ask_human", question="Which colour should the shed be?")),
            turn("lead", finish("painted the shed green"), last="green"),
        ]
    }
    async with sim_for(script) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, {"lead": ["finish", "ask_human"]})
        async with (
            serve_process(tmp_path, guild=guild, deployment=deployment) as server,
            runs_face(server.base_url, server.workspace) as session,
        ):
            _, submitted = await tool(session, "submit_task", task="paint the shed")
            run_id = submitted["runId"]
            parked = await poll(session, "run_status", lambda a: a.get("pendingQuestions"), run_id=run_id)
            queue_id = parked["pendingQuestions"][0]["queueId"]
            _, answered = await tool(session, "answer_question", answer="green", queue_id=queue_id)
            done = await poll(session, "run_status", lambda a: a.get("queueStatus") == "done", run_id=queue_id)
            _, result = await tool(session, "run_result", run_id=done["run"]["runId"])
    assert parked["status"] == "needs_clarification"
    assert parked["pendingQuestions"][0]["question"] == "Which colour should the shed be?"
    assert answered["ok"] and answered["queueId"] == queue_id
    assert done["run"]["runId"] != run_id and done["run"]["status"] == "success"
    assert result["card"]["summary"] == "painted the shed green"


async def test_stop_run_ends_the_active_run_and_the_queued_task_starts(tmp_path: Path, sim_for) -> None:
    script = {
        "turns": [
            turn("lead", call("run_shell", command=SLEEPER)),
            turn("lead", finish("the next one ran"), last="next task"),
        ]
    }
    async with sim_for(script) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, {"lead": ["finish", "run_shell"]})
        async with (
            serve_process(tmp_path, guild=guild, deployment=deployment) as server,
            runs_face(server.base_url, server.workspace) as session,
        ):
            _, submitted = await tool(session, "submit_task", task="sleep on it")
            run_id = submitted["runId"]
            _, queued = await tool(session, "submit_task", task="next task")
            pid_file = server.workspace / "sleeper.pid"
            pid = await server.wait_for(lambda: _read_pid(pid_file), what="the sleeping tool")
            stopped = await tool(session, "stop_run", run_id=run_id)
            gone = process_gone(pid)
            _, status = await tool(session, "run_status", run_id=run_id)
            _, result = await tool(session, "run_result", run_id=run_id)
            again = await tool(session, "stop_run", run_id=run_id)
            nxt = await poll(session, "run_status", lambda a: a.get("queueStatus") == "done", run_id=queued["queueId"])
            events = await server.events(run_id)
    assert stopped == (False, {"ok": True, "runId": run_id, "status": "cancelled"})
    assert gone and status["status"] == "cancelled"
    assert result["card"]["error"]["message"] == "the operator stopped the run (through the MCP runs face)"
    assert again[0] and f"run {run_id} is cancelled, not the active run" in again[1] and "409" in again[1]
    assert nxt["run"]["status"] == "success"
    assert events[-1]["type"] == "run_stopped" and events[-1]["payload"]["by"] == "mcp"


async def _read_pid(path: Path) -> int | None:
    text = path.read_text().strip() if path.exists() else ""
    return int(text) if text else None


async def test_the_token_is_sent_and_a_refusal_is_explained(tmp_path: Path) -> None:
    from hypercorn.config import Config
    from hypercorn.trio import serve
    from quart import request
    from quart_trio import QuartTrio

    seen: list[str | None] = []
    app = QuartTrio("token-check")

    @app.get("/api/runs")
    async def runs() -> Any:
        seen.append(request.headers.get("authorization"))
        if request.headers.get("authorization") != "Bearer from-the-file":
            return {"error": "unauthorized"}, 401
        return []

    @app.get("/api/queue")
    async def queue() -> Any:
        return []

    config = Config()
    config.bind = ["127.0.0.1:0"]
    workspace = tmp_path / "ws"
    (workspace / ".orchestration").mkdir(parents=True)
    async with trio.open_nursery() as nursery:
        binds = await nursery.start(serve, app, config)
        async with runs_face(binds[0], workspace) as session:
            refused = await tool(session, "list_runs")
            (workspace / ".orchestration" / "token").write_text("from-the-file\n")
            (workspace / ".orchestration" / "token").chmod(0o600)
            accepted = await tool(session, "list_runs")
        async with runs_face(binds[0], workspace, {"ORCHESTRATOR_TOKEN": "from-env"}) as session:
            env_first = await tool(session, "list_runs")
        nursery.cancel_scope.cancel()
    assert refused[0] and "refused the request (401)" in refused[1] and "ORCHESTRATOR_TOKEN" in refused[1]
    assert accepted == (False, {"runs": [], "queue": []})
    assert env_first[0]
    assert seen == [None, "Bearer from-the-file", "Bearer from-env"]


def test_flags_of_the_other_face_are_refused() -> None:
    import subprocess

    base = [sys.executable, "-m", "orchestrator", "mcp"]
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO / "src")}
    runs = subprocess.run([*base, "--face", "runs", "--transport", "http"], env=env, capture_output=True, text=True)
    workflows = subprocess.run([*base, "--server", "http://x"], env=env, capture_output=True, text=True)
    assert runs.returncode == 2 and "--transport does not apply to --face runs" in runs.stderr
    assert workflows.returncode == 2 and "--server does not apply to --face workflows" in workflows.stderr
