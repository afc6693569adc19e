"""An active run through the routes (``routes.runs``, ``routes.questions``), in-process: one of
simultaneous submissions wins, the busy 409, post-write ``ask_human`` answered through ``/api/answer``,
operator inquiries and plan modifications (the service's ``RunControls``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio
from tests.engine.harness import call, finish, turn
from tests.helpers import serve_script
from tests.service.inprocess import InprocessServer, inprocess_server

HANDLER = {"inquiryHandlerRole": "inquiry_responder"}
ROLES = {
    "lead": ["agent", "ask_human", "finish"],
    "coder": ["run_shell", "ask_human", "finish"],
    "inquiry_responder": ["read_run_log", "finish"],
}
INVALID = {"ok": False, "error": "invalid_body"}
NOT_ACTIVE = {"ok": False, "error": "run_not_active"}


def _queue_bytes(server: InprocessServer) -> bytes:
    return (server.workspace / ".orchestration" / "queue.json").read_bytes()


async def _pending_question(server: InprocessServer) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        questions = await server.questions()
        return questions[0] if questions else None

    return await server.wait_for(probe, what="a pending question")


async def _summary_facts(server: InprocessServer, sim: Any) -> dict[str, Any]:
    """The facts the service sent the model for the run-list summary (once it has asked)."""

    async def probe() -> dict[str, Any] | None:
        for request in await sim.responses_requests():
            items = request["body"]["input"]
            if "one-line summaries" in json.dumps(items[:1]):
                return json.loads(items[-1]["content"])
        return None

    return await server.wait_for(probe, what="the summary request")


async def test_a_post_write_question_holds_the_run_busy_until_answered_and_inquiries_are_answered(
    tmp_path: Path,
) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="coder", task="store the data")),
            turn("coder", call("ask_human", question="Which database?", context="storage layer")),
            turn("inquiry_responder", finish("The coder is waiting for the database answer.")),
            turn("coder", finish("used postgres"), last="postgres"),
            turn("lead", finish("stored in postgres"), last="used postgres"),
        ]
    }
    async with serve_script(script) as sim, inprocess_server(tmp_path, sim.base_url, ROLES, **HANDLER) as server:
        # Simultaneous submissions while idle: exactly one starts, the others are refused and
        # leave nothing behind in the queue.
        responses: dict[int, Any] = {}

        async def submit(i: int) -> None:
            responses[i] = await server.post("/api/runs", {"task": f"store the data ({i})"})

        async with trio.open_nursery() as nursery:
            for i in range(12):
                nursery.start_soon(submit, i)
        started = [i for i, r in responses.items() if r.status_code == 201]
        assert len(started) == 1, [(r.status_code, r.text) for r in responses.values()]
        refused = [r for r in responses.values() if r.status_code != 201]
        assert all((r.status_code, r.json()) == (409, {"ok": False, "error": "run_in_progress"}) for r in refused)
        task = f"store the data ({started[0]})"
        run_id = responses[started[0]].json()["runId"]
        question = await _pending_question(server)
        assert set(question) == {"id", "question", "context", "askedAt"}
        assert (question["question"], question["context"]) == ("Which database?", "storage layer")

        # Scenario 3: busy → 409 before anything is enqueued.
        before = _queue_bytes(server)
        response = await server.post("/api/runs", {"task": "something else"})
        assert (response.status_code, response.json()) == (409, {"ok": False, "error": "run_in_progress"})
        response = await server.post("/api/runs", {"task": "continue it", "continuesFrom": run_id})
        assert (response.status_code, response.json()) == (400, INVALID)  # a running run has no outcome
        assert _queue_bytes(server) == before
        (item,) = await server.json("/api/queue")
        assert (item["status"], item["runId"], item["task"]) == ("active", run_id, task)

        view = await server.json(f"/api/runs/{run_id}")
        assert view["status"] == "running" and view["endTime"] is None and view["interruptPending"] is False
        assert view["roleTree"]["active"] is True and view["roleTree"]["children"][0]["active"] is True
        (asked,) = view["questionHistory"]
        assert (asked["id"], asked["question"], asked["answer"]) == (question["id"], "Which database?", None)
        (listed,) = await server.json("/api/runs")
        assert (listed["status"], listed["summary"]) == ("running", task)  # the task-only summary
        latest = await server.json("/api/run")
        assert (latest["runId"], latest["status"]) == (run_id, "running")  # the active run is the latest

        # Scenario 18: interrupt validation; scenario 16: the inquiry is queued (202).
        other = "run-20000101-000000"
        response = await server.post(f"/api/runs/{other}/interrupt", {"kind": "inquiry", "message": "hi"})
        assert (response.status_code, response.json()) == (409, NOT_ACTIVE)
        for body in (
            {"kind": "notice", "message": "stop"},
            {"kind": "inquiry", "message": ""},
            {"kind": "inquiry", "message": "   "},
            {"kind": "inquiry"},
            {"message": "how far?"},
            {"kind": "plan_modification", "message": 3},
        ):
            response = await server.post(f"/api/runs/{run_id}/interrupt", body)
            assert (response.status_code, response.json()) == (400, INVALID), body
        response = await server.post(f"/api/runs/{run_id}/interrupt", {"kind": "inquiry", "message": "How far?"})
        assert (response.status_code, response.json()) == (202, {"ok": True})
        assert (await server.json(f"/api/runs/{run_id}"))["interruptPending"] is True

        # Scenario 8: the answer resolves the question; the run continues.
        response = await server.post("/api/answer", {"id": "no-such-question", "answer": "postgres"})
        assert (response.status_code, response.json()) == (404, {"ok": False, "error": "not_found"})
        response = await server.post("/api/answer", {"id": question["id"], "answer": 42})
        assert (response.status_code, response.json()) == (400, INVALID)
        response = await server.post("/api/answer", {"id": question["id"], "answer": "postgres"})
        assert (response.status_code, response.json()) == (200, {"ok": True})
        view = await server.run_status(run_id, "success")
        response = await server.post("/api/answer", {"id": question["id"], "answer": "again"})
        assert response.status_code == 404
        assert await server.questions() == []

        assert view["result"]["summary"] == "stored in postgres" and view["interruptPending"] is False
        (asked,) = view["questionHistory"]
        assert asked["answer"] == "postgres" and asked["answeredAt"] is not None
        (inquiry,) = view["interrupts"]
        assert inquiry["kind"] == "inquiry" and inquiry["message"] == "How far?"
        assert (inquiry["state"], inquiry["answer"]) == (
            "answered",
            "The coder is waiting for the database answer.",
        )
        assert inquiry["handler"] == "inquiry_responder"
        events = await server.events(run_id)
        types = [e["type"] for e in events]
        assert types.count("human_answer") == 1 and types.index("human_answer") > types.index("ask_human")
        assert next(e for e in events if e["type"] == "human_answer")["payload"] == {
            "id": question["id"],
            "answer": "postgres",
        }
        response = await server.post(f"/api/runs/{run_id}/interrupt", {"kind": "inquiry", "message": "still?"})
        assert (response.status_code, response.json()) == (409, NOT_ACTIVE)
        (item,) = await server.json("/api/queue")
        assert (item["status"], item["resultSummary"]) == ("done", "stored in postgres")
        assert await _summary_facts(server, sim) == {
            "task": task,
            "interrupts": ["inquiry: How far?"],
            "result": {"status": "success", "summary": "stored in postgres"},
        }
        requests = await sim.responses_requests()
    coder_after = next(r for r in requests if r["turn"] == 3)["body"]["input"]
    assert json.loads(coder_after[-1]["output"]) == {"kind": "success", "data": {"answer": "postgres"}}
    assert len(coder_after) == 4  # system, task, the ask, its answer: the inquiry left the history alone


async def test_a_plan_modification_over_http_aborts_the_work_below_the_root(tmp_path: Path) -> None:
    script = {
        "turns": [
            turn("lead", call("agent", role="coder", task="long job")),
            turn("coder", call("run_shell", command="sleep 30")),
            turn("lead", finish("re-planned"), last="[Operator plan modification"),
        ]
    }
    async with serve_script(script) as sim, inprocess_server(tmp_path, sim.base_url, ROLES) as server:
        run_id = (await server.post("/api/runs", {"task": "long job"})).json()["runId"]

        async def shell_running() -> bool:
            events = await server.events(run_id)
            return any(e["type"] == "tool_call" and e["payload"]["tool"] == "run_shell" for e in events)

        await server.wait_for(shell_running, what="the coder's command")
        response = await server.post(
            f"/api/runs/{run_id}/interrupt", {"kind": "plan_modification", "message": "use the fast path"}
        )
        assert (response.status_code, response.json()) == (202, {"ok": True})
        view = await server.run_status(run_id, "success", seconds=15)  # the 30 s command was killed
        assert view["result"]["summary"] == "re-planned"
        (modification,) = view["interrupts"]
        assert modification["kind"] == "plan_modification" and modification["message"] == "use the fast path"
        assert (modification["target"], modification["targetRole"]) == ("lead-0-1", "lead")
        assert modification["aborted"] == ["coder-1-2"]
        coder = next(e for e in await server.events(run_id) if e["type"] == "role_finished")
        assert coder["payload"]["role"] == "coder" and coder["payload"]["error"]["kind"] == "interrupted"
        facts = await _summary_facts(server, sim)
        assert facts["interrupts"] == ["plan modification: use the fast path"]
        requests = await sim.responses_requests()
    lead_last = next(r for r in requests if r["turn"] == 2)["body"]["input"]
    assert lead_last[-1]["content"].startswith("[Operator plan modification")
    assert "use the fast path" in lead_last[-1]["content"]


async def test_a_stop_still_ending_after_the_bound_answers_202_running_then_settles(
    tmp_path: Path, monkeypatch
) -> None:
    """``POST /stop`` waits, bounded, for the run to settle; past the bound (here none at all) it answers 202
    with ``running``, and the run settles ``cancelled`` all the same."""
    monkeypatch.setattr("orchestrator.service.core.STOP_WAIT_SECONDS", 0.0)
    script = {
        "turns": [
            turn("lead", call("agent", role="coder", task="wait for an answer")),
            turn("coder", call("ask_human", question="Hold on?", context="a question nobody answers")),
        ]
    }
    async with serve_script(script) as sim, inprocess_server(tmp_path, sim.base_url, ROLES) as server:
        run_id = (await server.post("/api/runs", {"task": "to be stopped"})).json()["runId"]
        await _pending_question(server)
        stopped = await server.post(f"/api/runs/{run_id}/stop")
        assert stopped.status_code == 202
        assert stopped.json() == {"ok": True, "runId": run_id, "status": "running"}
        view = await server.run_status(run_id, "cancelled")
        assert view["error"]["message"] == "the operator stopped the run (through the HTTP API)"
