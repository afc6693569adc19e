"""``routes.queue`` and the scheduler behind it, row by row of the queue's boot table (docs/queueing.md) —
through the in-process app over a started ``Service`` and the sim model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.engine.harness import call, finish, turn
from tests.helpers import serve_script
from tests.service.inprocess import InprocessServer, inprocess_server

ROLES = {
    "lead": ["agent", "ask_human", "finish"],
    "coder": ["run_shell", "ask_human", "finish"],
}
INVALID = {"ok": False, "error": "invalid_body"}
NOT_FOUND = {"ok": False, "error": "not_found"}
FORBIDDEN = {"ok": False, "error": "status_forbidden"}


def _waiting(items: list[dict[str, Any]]) -> list[str]:
    return [i["task"] for i in items if i["status"] == "waiting"]


async def _first_message(sim: Any, needle: str) -> str:
    """The entry role's first user message of the run whose task starts with ``needle``."""
    for request in await sim.responses_requests():
        body = request["body"]
        if "You are the lead." in json.dumps(body["input"][:1]):
            first_user = next(m for m in body["input"] if m.get("role") == "user")
            if first_user["content"].startswith(needle):
                return first_user["content"]
    raise AssertionError(f"no lead request for {needle!r}")


async def _expect(server: InprocessServer, method: str, path: str, body: Any, status: int, expected: Any = None) -> Any:
    response = await server.http.request(method, path, json=body)
    assert response.status_code == status, (method, path, body, response.text)
    if expected is not None:
        assert response.json() == expected, (method, path, body)
    return response.json()


async def test_tasks_queued_while_busy_wait_are_managed_and_run_with_a_briefing(tmp_path: Path) -> None:
    slow = {"content": "Reading the briefing. " * 4, "chunkChars": 8, "chunkDelayMs": 40}
    script = {
        "turns": [
            turn("lead", call("agent", role="coder", task="alpha work"), last="alpha job"),
            turn("coder", call("ask_human", question="Proceed with alpha?")),
            turn("coder", finish("alpha work done"), last="yes"),
            turn("lead", finish("alpha finished"), last="alpha work done"),
            turn("lead", finish("beta finished"), last="beta job", **slow),
        ]
    }
    async with serve_script(script) as sim, inprocess_server(tmp_path, sim.base_url, ROLES) as server:
        alpha_run = (await server.post("/api/runs", {"task": "alpha job"})).json()["runId"]

        async def question() -> dict[str, Any] | None:
            return next(iter(await server.questions()), None)

        asked = await server.wait_for(question, what="alpha's question")
        (alpha,) = await server.json("/api/queue")
        assert (alpha["status"], alpha["runId"]) == ("active", alpha_run)

        # Scenario 4: POST /api/queue while busy → 201 waiting at the tail (never 409).
        beta = await _expect(server, "POST", "/api/queue", {"task": "beta job", "effort": "quick"}, 201)
        assert set(beta) == {"id", "task", "effort", "status", "queuedAt"}
        assert (beta["task"], beta["effort"], beta["status"]) == ("beta job", "quick", "waiting")
        gamma = await _expect(server, "POST", "/api/queue", {"task": "gamma job"}, 201)
        delta = await _expect(server, "POST", "/api/queue", {"task": "delta job"}, 201)
        assert "effort" not in gamma
        items = await server.json("/api/queue")
        assert [i["id"] for i in items] == [alpha["id"], beta["id"], gamma["id"], delta["id"]]
        for body in ({}, {"task": ""}, {"task": " "}, {"task": 1}, {"task": "x", "effort": "max"}, ["x"]):
            await _expect(server, "POST", "/api/queue", body, 400, INVALID)

        # Scenario 5: PATCH moves and edits waiting items only.
        moved = await _expect(server, "PATCH", f"/api/queue/{gamma['id']}", {"position": 0}, 200)
        assert moved["id"] == gamma["id"] and moved["status"] == "waiting"
        assert _waiting(await server.json("/api/queue")) == ["gamma job", "beta job", "delta job"]
        await _expect(server, "PATCH", f"/api/queue/{gamma['id']}", {"position": 99}, 200)
        assert _waiting(await server.json("/api/queue")) == ["beta job", "delta job", "gamma job"]
        await _expect(server, "PATCH", f"/api/queue/{delta['id']}", {"position": -3}, 200)  # clamped
        assert _waiting(await server.json("/api/queue")) == ["delta job", "beta job", "gamma job"]
        await _expect(server, "PATCH", f"/api/queue/{delta['id']}", {"position": 1.0}, 200)
        assert _waiting(await server.json("/api/queue")) == ["beta job", "delta job", "gamma job"]
        for body in (
            {"position": "x"},
            {"position": None},
            {"position": 0.5},
            {"task": ""},
            {"effort": "max"},
            [1],
        ):
            await _expect(server, "PATCH", f"/api/queue/{gamma['id']}", body, 400, INVALID)
        edited = await _expect(
            server, "PATCH", f"/api/queue/{gamma['id']}", {"task": "gamma job revised", "effort": "thorough"}, 200
        )
        assert (edited["task"], edited["effort"]) == ("gamma job revised", "thorough")
        for method, suffix, body in (
            ("PATCH", "", {"position": 0}),
            ("DELETE", "", None),
            ("POST", "/answer", {"answer": "x"}),
            ("POST", "/requeue", None),
        ):
            await _expect(server, method, f"/api/queue/no-such-item{suffix}", body, 404, NOT_FOUND)
        await _expect(server, "PATCH", f"/api/queue/{alpha['id']}", {"task": "changed"}, 409, FORBIDDEN)
        await _expect(server, "DELETE", f"/api/queue/{alpha['id']}", None, 409, FORBIDDEN)
        await _expect(server, "POST", f"/api/queue/{beta['id']}/answer", {"answer": "x"}, 409, FORBIDDEN)
        await _expect(server, "POST", f"/api/queue/{beta['id']}/requeue", None, 409, FORBIDDEN)
        await _expect(server, "POST", f"/api/queue/{beta['id']}/answer", {"answer": 3}, 400, INVALID)

        # DELETE marks a waiting item cancelled; it stays in the file.
        for item in (gamma, delta):
            cancelled = await _expect(server, "DELETE", f"/api/queue/{item['id']}", None, 200)
            assert cancelled["status"] == "cancelled" and "settledAt" in cancelled
        await _expect(server, "DELETE", f"/api/queue/{gamma['id']}", None, 409, FORBIDDEN)
        await _expect(server, "PATCH", f"/api/queue/{gamma['id']}", {"position": 0}, 409, FORBIDDEN)
        assert [i["status"] for i in await server.json("/api/queue")] == ["active", "waiting", *["cancelled"] * 2]

        # The first run ends → the waiting item goes active, then done, with the briefing.
        await _expect(server, "POST", "/api/answer", {"id": asked["id"], "answer": "yes"}, 200, {"ok": True})
        await server.run_status(alpha_run, "success")

        async def bound() -> dict[str, Any] | None:  # the dispatch marker (no runId) may last a retry sleep
            item = await server.queue_item(beta["id"])
            return item if item["status"] == "done" or "runId" in item else None

        active = await server.wait_for(bound, what="beta's run to start")
        assert active["status"] == "active" and active["runId"] != alpha_run
        beta_run = active["runId"]
        done = await server.item_status(beta["id"], "done")
        assert done["runId"] == beta_run and done["resultSummary"] == "beta finished" and "settledAt" in done
        assert (await server.json(f"/api/runs/{beta_run}"))["effort"] == "quick"
        await _expect(server, "PATCH", f"/api/queue/{beta['id']}", {"task": "again"}, 409, FORBIDDEN)
        await _expect(server, "DELETE", f"/api/queue/{beta['id']}", None, 409, FORBIDDEN)
        await _expect(server, "POST", f"/api/queue/{beta['id']}/requeue", None, 409, FORBIDDEN)
        alpha_done = await server.queue_item(alpha["id"])
        assert (alpha_done["status"], alpha_done["resultSummary"]) == ("done", "alpha finished")

        message = await _first_message(sim, "beta job")
        assert message.startswith("beta job\n\n[Platform briefing — this task waited in the queue]")
        assert f"Queued at {beta['queuedAt']}." in message
        assert f"Runs completed meanwhile:\n- {alpha_run}: " in message
        assert "Queue items cancelled meanwhile:\n- gamma job revised\n- delta job" in message
        meta = json.loads((server.workspace / ".orchestration" / "runs" / beta_run / "meta.json").read_text())
        assert meta["task"] == "beta job" and "continuesFrom" not in meta


async def test_a_pre_write_question_parks_an_answer_continues_and_an_error_is_requeued(tmp_path: Path) -> None:
    script = {
        "turns": [
            turn(
                "lead",
                call("ask_human", question="Which database?"),
                call("agent", role="coder", task="code it"),
                last="build the store",
            ),
            turn("lead", finish("database unreachable", status="error"), last="The operator answered: postgres"),
            turn("lead", finish("store built on postgres"), last="database unreachable"),
        ]
    }
    async with serve_script(script) as sim, inprocess_server(tmp_path, sim.base_url, ROLES) as server:
        created = await _expect(server, "POST", "/api/queue", {"task": "build the store"}, 201)
        item_id = created["id"]

        # Scenario 6: the early question parks the run; it never reaches /api/questions.
        parked = await server.item_status(item_id, "needs_input")
        parked_run = parked["runId"]
        assert parked["question"] == "Which database?" and parked["continuesFrom"] == parked_run
        assert "settledAt" not in parked and "answer" not in parked
        assert await server.questions() == []
        view = await server.json(f"/api/runs/{parked_run}")
        assert view["status"] == "needs_clarification"
        assert view["result"]["summary"] == "waiting for an answer to: Which database?"
        events = await server.events(parked_run)
        assert [e["payload"]["role"] for e in events if e["type"] == "role_start"] == ["lead"]  # no coder
        assert [e["type"] for e in events].count("ask_human") == 1
        assert not any(e["type"] == "human_answer" for e in events)
        await _expect(server, "PATCH", f"/api/queue/{item_id}", {"task": "x"}, 409, FORBIDDEN)
        await _expect(server, "POST", f"/api/queue/{item_id}/requeue", None, 409, FORBIDDEN)
        for body in ({}, {"answer": 5}, {"answer": None}, "postgres"):
            await _expect(server, "POST", f"/api/queue/{item_id}/answer", body, 400, INVALID)

        # Scenario 7: the answer re-dispatches it as a continuation whose briefing holds both.
        answered = await _expect(server, "POST", f"/api/queue/{item_id}/answer", {"answer": "postgres"}, 200)
        assert answered["answer"] == "postgres" and answered["question"] == "Which database?"
        assert answered["continuesFrom"] == parked_run
        errored = await server.item_status(item_id, "error")
        second_run = errored["runId"]
        assert second_run != parked_run
        assert errored["resultSummary"] == errored["error"] == "database unreachable"
        assert "settledAt" in errored
        view = await server.json(f"/api/runs/{second_run}")
        assert (view["status"], view["continuesFrom"]) == ("error", parked_run)
        message = (await _lead_first_messages(sim))[1]
        assert "Before this run, the task paused to ask: Which database?" in message
        assert "The operator answered: postgres" in message
        assert f"[Platform briefing — this run continues run {parked_run}]" in message

        # Scenario 9: requeue → waiting at the tail, lineage re-pointed at the errored run.
        requeued = await _expect(server, "POST", f"/api/queue/{item_id}/requeue", None, 200)
        assert (requeued["status"], requeued["continuesFrom"]) == ("waiting", second_run)
        assert not {"runId", "settledAt", "resultSummary", "error"} & set(requeued)
        done = await server.item_status(item_id, "done")
        third_run = done["runId"]
        assert done["resultSummary"] == "store built on postgres" and third_run not in (parked_run, second_run)
        assert (await server.json(f"/api/runs/{third_run}"))["continuesFrom"] == second_run
        message = (await _lead_first_messages(sim))[2]
        assert "Prior result (error): database unreachable" in message
        assert len(await server.json("/api/queue")) == 1  # moved, not duplicated
        await _expect(server, "POST", f"/api/queue/{item_id}/requeue", None, 409, FORBIDDEN)


async def _lead_first_messages(sim: Any) -> list[str]:
    """The entry role's first user message of every run, in order (one per lead conversation start)."""
    messages: list[str] = []
    for request in await sim.responses_requests():
        items = request["body"]["input"]
        users = [m for m in items if m.get("role") == "user"]
        lead = items and str(items[0].get("content")).startswith("You are the lead.\n")
        if lead and len(users) == 1 and len(items) == 2:  # system (prompt + effort directive), task
            messages.append(users[0]["content"])
    return messages
