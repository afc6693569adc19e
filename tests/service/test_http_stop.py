"""``POST /api/runs/:id/stop`` on a real ``orchestrator serve``: the run's tool subprocess is gone when the
answer arrives, the run and its queue item end ``cancelled``, the next queued task starts, a stopped run
continues like a finished one; stopping a run that is not active is a 409 naming it and its status."""

from __future__ import annotations

from pathlib import Path

from tests.engine.harness import call, finish, turn
from tests.helpers import SLEEPER, process_gone, serve_script
from tests.service.server import serve_process, write_config

ROLES = {"lead": ["agent", "finish"], "coder": ["run_shell", "finish"]}


async def test_stop_through_the_api_ends_the_tool_settles_cancelled_and_starts_the_next_task(tmp_path: Path) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="coder", task="code")),
            turn("coder", call("run_shell", command=SLEEPER)),
            turn("lead", finish("second done"), last="second task"),
            turn("lead", finish("carried on"), last="this run continues run"),
        ]
    }
    async with serve_script(script) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        async with serve_process(tmp_path, guild=guild, deployment=deployment) as server:
            started = await server.post("/api/runs", {"task": "first task"})
            assert started.status_code == 201, started.text
            run_id = started.json()["runId"]
            queued = (await server.post("/api/queue", {"task": "second task"})).json()
            pid_file = server.workspace / "sleeper.pid"

            async def sleeping() -> int | None:
                text = pid_file.read_text().strip() if pid_file.exists() else ""
                return int(text) if text else None

            pid = await server.wait_for(sleeping, what="the tool's sleep to start")
            stopped = await server.post(f"/api/runs/{run_id}/stop")
            assert stopped.status_code == 200, stopped.text
            assert stopped.json() == {"ok": True, "runId": run_id, "status": "cancelled"}
            assert process_gone(pid)  # the answer comes after the run settled: no window for the subprocess

            view = await server.json(f"/api/runs/{run_id}")
            assert view["status"] == "cancelled" and view["endTime"]
            assert view["error"]["message"] == "the operator stopped the run (through the HTTP API)"
            (first,) = [i for i in await server.json("/api/queue") if i.get("runId") == run_id]
            assert first["status"] == "cancelled" and first["settledAt"]
            assert first["error"] == "the operator stopped the run (through the HTTP API)"
            events = await server.events(run_id)
            assert events[-1]["type"] == "run_stopped"
            assert events[-1]["payload"] == {"runId": run_id, "by": "api", "liveRoles": ["lead-0-1", "coder-1-2"]}
            run_dir = server.workspace / ".orchestration" / "runs" / run_id
            assert (run_dir / "state.json").exists()  # the final checkpoint is kept

            second = await server.item_status(queued["id"], "done")
            assert second["resultSummary"] == "second done"

            again = await server.post(f"/api/runs/{run_id}/stop")
            assert again.status_code == 409
            assert again.json() == {
                "ok": False,
                "error": "run_not_active",
                "runId": run_id,
                "status": "cancelled",
                "message": f"run {run_id} is cancelled, not the active run: only the active run can be stopped",
            }

            go_on = await server.post("/api/runs", {"task": "go on", "continuesFrom": run_id})
            assert go_on.status_code == 201, go_on.text
            next_id = go_on.json()["runId"]
            done = await server.run_status(next_id, "success")
            assert done["continuesFrom"] == run_id
            assert (
                "Prior result (cancelled): the operator stopped the run"
                in (await server.events(next_id))[1]["payload"]["task"]
            )


async def test_stop_refuses_what_it_cannot_stop_by_name(tmp_path: Path) -> None:
    async with serve_script({"turns": []}) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        async with serve_process(tmp_path, guild=guild, deployment=deployment) as server:
            missing = await server.post("/api/runs/run-20200101-000000/stop")
            assert (missing.status_code, missing.json()) == (404, {"ok": False, "error": "not_found"})
            bad = await server.post("/api/runs/run-20200101-000000/stop", {"by": "someone"})
            assert (bad.status_code, bad.json()["error"]) == (400, "invalid_body")
            not_json = await server.http.post(
                "/api/runs/run-20200101-000000/stop", content=b"[1]", headers={"content-type": "application/json"}
            )
            assert not_json.status_code == 400


async def test_stop_while_a_question_is_pending_clears_it(tmp_path: Path) -> None:
    script = {"turns": [turn("lead", call("ask_human", question="Which colour?"))]}
    async with serve_script(script) as sim:
        roles = {"lead": ["finish", "ask_human", "write_file"]}  # a writing role: the question waits in the run
        guild, deployment = write_config(tmp_path, sim.base_url, roles)
        async with serve_process(tmp_path, guild=guild, deployment=deployment) as server:
            run_id = (await server.post("/api/runs", {"task": "paint"})).json()["runId"]
            await server.wait_for(server.questions, what="the question")
            stopped = await server.post(f"/api/runs/{run_id}/stop", {"by": "ui"})
            assert stopped.json()["status"] == "cancelled"
            assert await server.questions() == []
            events = await server.events(run_id)
            assert events[-1]["payload"]["by"] == "ui" and not [e for e in events if e["type"] == "human_answer"]
            (item,) = await server.json("/api/queue")
            assert item["status"] == "cancelled"
