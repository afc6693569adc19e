"""The service's lifecycle: the bootstrap error page, the page title, SIGTERM when idle (0, live-stream
sockets closed with 1001), a run winding down at a safe point (0), a run stuck past the wind-down
deadline or cut short by a second signal (130), and the restarted service resuming it and settling
its queue item."""

from __future__ import annotations

import json
import signal
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from tests.engine.harness import call, finish, turn
from tests.helpers import serve_script, write_deployment, write_guild
from tests.service.server import Server, queue_file, serve_process, write_config
from tests.slowness import budget
from trio_websocket import ConnectionClosed, open_websocket_url

ROLES = {"lead": ["agent", "finish"], "coder": ["run_shell", "finish"]}


async def test_an_invalid_deployment_still_binds_and_serves_the_error_page_then_exits_2(tmp_path: Path) -> None:
    guild = write_guild(tmp_path / "guild", ROLES)
    deployment = write_deployment(tmp_path / "deployment.json", "http://127.0.0.1:9/v1", maxAgentDepth="eight")
    env = {"ORCHESTRATOR_TITLE": "", "ORCHESTRATOR_API_KEY": "sk-never-shown-0815"}
    async with serve_process(tmp_path, guild=guild, deployment=deployment, env=env) as server:
        page = await server.get("/")
        assert page.status_code == 503 and page.headers["content-type"].startswith("text/html")
        assert "<title>Adaptive Orchestrator — configuration error</title>" in page.text  # empty title → default
        assert "executor.maxAgentDepth" in page.text and str(deployment) in page.text
        assert "sk-never-shown-0815" not in page.text
        assert (await server.get("/runs/whatever")).status_code == 503
        health = await server.get("/healthz")  # the container health check sees the broken configuration
        assert (health.status_code, health.json()) == (503, {"ok": False, "error": "invalid_configuration"})
        for method, path in (("GET", "/api/runs"), ("POST", "/api/runs"), ("GET", "/api/x")):
            response = await server.http.request(method, path)
            assert response.status_code == 503, (method, path)
            body = response.json()
            assert (body["ok"], body["error"]) == (False, "invalid_configuration")
            (problem,) = body["problems"]
            assert "executor.maxAgentDepth" in problem and "sk-never-shown-0815" not in problem
        assert await server.stop() == 2
    assert "invalid configuration" in server.stderr() and "executor.maxAgentDepth" in server.stderr()


async def test_a_misspelled_mcp_server_command_is_on_the_error_page_naming_server_and_role(
    tmp_path: Path,
) -> None:
    guild = write_guild(tmp_path / "guild", {"lead": ["agent", "finish", "mcp:files/*"], "coder": ["finish"]})
    deployment = write_deployment(tmp_path / "deployment.json", "http://127.0.0.1:9/v1")
    document = json.loads(deployment.read_text())
    document["mcpServers"] = {"files": {"command": "npxx", "args": ["-y", "some-mcp-server"]}}
    deployment.write_text(json.dumps(document))
    async with serve_process(tmp_path, guild=guild, deployment=deployment) as server:
        body = (await server.get("/api/runs")).json()
        assert body["error"] == "invalid_configuration"
        (problem,) = body["problems"]
        assert "MCP server 'files' could not be started" in problem and "(used by role `lead`)" in problem
        assert "MCP server &#x27;files&#x27; could not be started" in (await server.get("/")).text
        assert await server.stop() == 2


async def test_the_title_is_served_and_sigterm_when_idle_exits_0(tmp_path: Path) -> None:
    async with serve_script({"turns": []}) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        env = {"ORCHESTRATOR_TITLE": 'Bench <one> & "co"'}
        async with serve_process(tmp_path, guild=guild, deployment=deployment, env=env) as server:
            page = await server.get("/")
            assert page.status_code == 200
            assert "<title>Bench &lt;one&gt; &amp; &quot;co&quot;</title>" in page.text
            assert "{{TITLE}}" not in page.text
            favicon = await server.get("/favicon.ico")
            assert (favicon.status_code, favicon.content) == (204, b"")
            health = await server.get("/healthz")  # liveness: the container's HEALTHCHECK
            assert (health.status_code, health.json()) == (200, {"ok": True})
            response = await server.get("/api/x")
            assert (response.status_code, response.json()) == (404, {"ok": False, "error": "not_found"})
            async with open_websocket_url(server.ws_url, extra_headers=server.auth_headers) as ws:
                await ws.send_message(json.dumps({"type": "subscribe", "runId": "run-20000101-000000"}))
                assert json.loads(await ws.get_message())["type"] == "subscribed"
                await server.http.aclose()
                server.process.send_signal(signal.SIGTERM)
                with trio.fail_after(budget(5)), pytest.raises(ConnectionClosed) as closed:
                    await ws.get_message()
            assert closed.value.reason.code == 1001  # going away, not hypercorn's 1006 cut-off
            assert await _exit_code(server) == 0
        assert "Traceback" not in server.stderr()


def _coder_started(events: list[dict[str, Any]]) -> bool:
    return any(e["type"] == "llm_call_start" and e["payload"]["role"] == "coder" for e in events)


async def _coder_waiting(server: Server, run_id: str, resumes: int) -> bool:
    """The coder's model call is in flight after the run's ``resumes``-th resume."""
    types = [(e["type"], e["payload"].get("role")) for e in await server.events(run_id)]
    starts = [i for i, t in enumerate(types) if t == ("run_resumed", None)]
    if len(starts) < resumes:
        return False
    after = starts[resumes - 1] if resumes else 0
    return ("llm_call_start", "coder") in types[after:]


async def test_sigterm_mid_run_winds_down_at_a_safe_point_exits_0_and_dispatches_nothing_more(
    tmp_path: Path,
) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="coder", task="slow work"), last="graceful task"),
            turn("coder", finish("coder done"), content="x" * 40, chunkChars=2, chunkDelayMs=40),
            turn("lead", finish("wound down cleanly"), last="[Operator notice"),
        ]
    }
    async with serve_script(script) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        env = {"ORCHESTRATOR_WIND_DOWN_SECONDS": "20"}
        async with serve_process(tmp_path, guild=guild, deployment=deployment, env=env) as server:
            run_id = (await server.post("/api/runs", {"task": "graceful task"})).json()["runId"]

            async def coder_streaming() -> bool:
                return _coder_started(await server.events(run_id))

            await server.wait_for(coder_streaming, what="the coder's model call")
            assert (await server.post("/api/queue", {"task": "queued before the signal"})).status_code == 201
            await server.http.aclose()
            server.process.send_signal(signal.SIGTERM)
            assert await _exit_code(server) == 0, server.stderr()  # the run finished: idle at the end
        requests = await sim.responses_requests()
    run_dir = server.workspace / ".orchestration" / "runs" / run_id
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["status"] == "success" and meta["result"]["summary"] == "wound down cleanly"
    items = queue_file(server.workspace)["items"]
    assert [(i["task"], i["status"]) for i in items] == [
        ("graceful task", "done"),  # settlement still maps during the drain
        ("queued before the signal", "waiting"),  # but nothing new is dispatched
    ]
    assert len(list((server.workspace / ".orchestration" / "runs").iterdir())) == 1
    said = server.stderr()
    assert f"winding down: run {run_id} is asked to wrap up" in said and "Ctrl-C again to stop it now" in said
    assert f"run {run_id} finished during the wind-down (success); stopped" in said
    lead_last = next(r for r in requests if r["turn"] == 2)["body"]["input"]
    assert lead_last[-2]["type"] == "function_call_output"  # the notice follows the agent call's result
    assert lead_last[-1]["content"].startswith("[Operator notice")


async def test_a_run_stuck_at_shutdown_exits_130_and_the_restarted_service_resumes_it(tmp_path: Path) -> None:
    stuck_coder = turn("coder", finish("never"), fail={"stallBeforeHeadersMs": 60000})
    stuck = {"turns": [turn("lead", call("agent", role="coder", task="slow work"), last="long task"), stuck_coder]}
    async with serve_script(stuck) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        # 1. The wind-down deadline passes with the run still in its model call: exit 130.
        env = {"ORCHESTRATOR_WIND_DOWN_SECONDS": "0.5"}
        async with serve_process(tmp_path, guild=guild, deployment=deployment, env=env) as server:
            run_id = (await server.post("/api/runs", {"task": "long task"})).json()["runId"]
            await server.wait_for(partial(_coder_waiting, server, run_id, 0), what="the coder's model call")
            await server.http.aclose()
            server.process.send_signal(signal.SIGTERM)
            assert await _exit_code(server) == 130, server.stderr()
        workspace = server.workspace
        run_dir = workspace / ".orchestration" / "runs" / run_id
        meta = json.loads((run_dir / "meta.json").read_text())
        assert meta["status"] == "running" and (run_dir / "state.json").exists()
        assert [(i["task"], i["status"], i["runId"]) for i in queue_file(workspace)["items"]] == [
            ("long task", "active", run_id)
        ]

        # 2. The next start resumes it (stuck again); during this drain the gate is closed: no new run,
        #    queued work waits; a second signal cuts the 60 s wind-down short: exit 130 again.
        await sim.set_script({"turns": [stuck_coder]})
        env = {"ORCHESTRATOR_WIND_DOWN_SECONDS": "60"}
        async with serve_process(
            tmp_path, guild=guild, deployment=deployment, workspace=workspace, env=env, name="second"
        ) as server:
            await server.wait_for(partial(_coder_waiting, server, run_id, 1), what="the resumed model call")
            server.process.send_signal(signal.SIGTERM)

            async def refused() -> Any:
                response = await server.post("/api/runs", {"task": "too late"})
                return response if response.status_code != 409 else None

            response = await server.wait_for(refused, what="the shutdown gate", seconds=5)
            assert (response.status_code, response.json()) == (503, {"ok": False, "error": "shutting_down"})
            queued = await server.post("/api/queue", {"task": "queued during the drain"})
            assert queued.status_code == 201 and queued.json()["status"] == "waiting"
            server.process.send_signal(signal.SIGTERM)
            assert await _exit_code(server) == 130, server.stderr()
        items = queue_file(workspace)["items"]
        assert [(i["task"], i["status"], i.get("runId")) for i in items] == [
            ("long task", "active", run_id),
            ("queued during the drain", "waiting", None),
        ]
        assert len(list(run_dir.parent.iterdir())) == 1  # nothing was dispatched

        # 3. The third start resumes it again; it completes, its item settles, the queued task runs.
        await sim.set_script(
            {
                "turns": [
                    turn(
                        "coder",
                        finish("resumed coder done"),
                        content="Back at it. " * 4,
                        chunkChars=8,
                        chunkDelayMs=200,
                    ),
                    turn("lead", finish("resumed lead done"), last="resumed coder done"),
                    turn("lead", finish("queued work done"), last="queued during the drain"),
                ]
            }
        )
        async with serve_process(
            tmp_path, guild=guild, deployment=deployment, workspace=workspace, name="third"
        ) as restarted:
            view = await restarted.json(f"/api/runs/{run_id}")
            assert view["status"] == "running"  # resumed under its original id
            view = await restarted.run_status(run_id, "success")
            assert view["result"]["summary"] == "resumed lead done"
            types = [e["type"] for e in await restarted.events(run_id)]
            assert types.count("run_resumed") == 2 and types.count("role_start") == 2  # no role restarted
            await restarted.idle()
            long_item, drained = await restarted.json("/api/queue")
            assert (long_item["status"], long_item["runId"], long_item["resultSummary"]) == (
                "done",
                run_id,
                "resumed lead done",
            )
            assert drained["status"] == "done" and drained["resultSummary"] == "queued work done"
            assert drained["runId"] != run_id
            assert not (run_dir / "state.json").exists()
            assert await restarted.stop() == 0
        requests = await sim.responses_requests()
    queued_first = next(r for r in requests if r["turn"] == 2)["body"]["input"][-1]["content"]
    assert f"Runs completed meanwhile:\n- {run_id}: " in queued_first


async def _said(server: Server, text: str) -> str:
    """Wait (bounded) until the server's stderr holds ``text``; the whole stderr then."""

    async def probe() -> str | None:
        said = server.stderr()
        return said if text in said else None

    return await server.wait_for(probe, what=f"{text!r} on stderr")


async def test_ctrl_c_says_what_it_does_and_a_pending_question_is_asked_again_after_the_restart(
    tmp_path: Path,
) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="coder", task="paint it"), last="paint the fence"),
            turn("coder", call("ask_human", question="Which colour?", context="the fence")),
            turn("coder", finish("painted blue"), last="blue"),
            turn("lead", finish("fence painted"), last="painted blue"),
        ]
    }
    roles = {"lead": ["agent", "finish"], "coder": ["run_shell", "ask_human", "finish"]}  # coder writes: no parking
    async with serve_script(script) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, roles)
        # 1. Ctrl-C while the coder waits for an answer: the wind-down line at once (the run cannot finish
        #    in its 60 s), a second Ctrl-C stops it, and the outcome says it resumes at the next start.
        env = {"ORCHESTRATOR_WIND_DOWN_SECONDS": "60"}
        async with serve_process(tmp_path, guild=guild, deployment=deployment, env=env) as server:
            run_id = (await server.post("/api/runs", {"task": "paint the fence"})).json()["runId"]
            (asked,) = await server.wait_for(server.questions, what="the question")
            sent = len(await sim.responses_requests())
            await server.http.aclose()
            server.process.send_signal(signal.SIGINT)
            said = await _said(server, f"winding down: run {run_id} is asked to wrap up at its next step")
            assert "a question pending now is asked again after the restart" in said
            assert server.alive()
            server.process.send_signal(signal.SIGINT)
            assert await _exit_code(server) == 130, server.stderr()
            said = server.stderr()
        assert "stopping now" in said
        assert f"stopped; run {run_id} will resume from its checkpoint at the next start" in said

        # 2. The next start announces the resume (stderr and /api/config, what the page shows) and asks the
        #    same question again; the model is not asked until it is answered.
        async with serve_process(
            tmp_path, guild=guild, deployment=deployment, workspace=server.workspace, name="second"
        ) as restarted:
            said = await _said(restarted, f"resuming run {run_id} from its checkpoint (interrupted at ")
            assert "it asks again: Which colour?" in said
            resumed = (await restarted.json("/api/config"))["resumed"]
            assert (resumed["runId"], resumed["question"]) == (run_id, "Which colour?")
            assert resumed["interruptedAt"] and resumed["message"].startswith(f"resuming run {run_id}")
            (again,) = await restarted.wait_for(restarted.questions, what="the question asked again")
            assert {k: again[k] for k in ("id", "question", "context")} == {
                k: asked[k] for k in ("id", "question", "context")
            }
            assert len(await sim.responses_requests()) == sent
            answered = await restarted.post("/api/answer", {"id": again["id"], "answer": "blue"})
            assert answered.status_code == 200, answered.text
            view = await restarted.run_status(run_id, "success")
            assert view["result"]["summary"] == "fence painted"
            await restarted.http.aclose()
            restarted.process.send_signal(signal.SIGINT)
            assert await _exit_code(restarted) == 0
        assert "stopping (no run is active)" in restarted.stderr()
        requests = await sim.responses_requests()
    scripted = [r for r in requests if r["turn"] is not None]  # not the run summary's request
    assert len(scripted) == sent + 2  # the coder's finish and the lead's: the asking turn was never re-sent
    events = [json.loads(line) for line in (server.workspace / ".orchestration" / "runs" / run_id / "log.jsonl").open()]
    assert [e["payload"]["id"] for e in events if e["type"] == "ask_human"] == [asked["id"]]
    assert [e["payload"]["answer"] for e in events if e["type"] == "human_answer"] == ["blue"]


async def _exit_code(server: Server) -> int:
    """Wait (bounded) for a signalled server to exit on its own. The client closes its keep-alive
    connections first: hypercorn lets an idle one hold the shutdown for its graceful timeout."""
    await server.http.aclose()
    with trio.fail_after(20):
        return await server.process.wait()
