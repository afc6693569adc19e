"""``routes.runs`` (and the run-detail and fallback routes a run's views reach): starting runs, the run
list and views, the log window, the flow model, settings, config and routing — through the in-process
app (Quart-Trio's test client) over a started ``Service`` and the sim model."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from tests.engine.harness import call, finish, turn
from tests.helpers import serve_script
from tests.service.inprocess import inprocess_server
from tests.service.server import queue_file

RUN_ID = re.compile(r"^run-\d{8}-\d{6}$")
ROLES = {
    "lead": ["agent", "ask_human", "finish"],
    "coder": ["run_shell", "ask_human", "finish"],
}
UNKNOWN_RUN = "run-20000101-000000"
NOT_FOUND = {"ok": False, "error": "not_found"}
INVALID = {"ok": False, "error": "invalid_body"}


def _summary_turn(line: str) -> dict[str, Any]:
    """The run-list summary request (the service's own system prompt, not a role's)."""
    return {"expect": {"systemContains": "one-line summaries"}, "content": line}


async def test_an_empty_workspace_answers_not_found_and_validates_bodies(tmp_path: Path) -> None:
    async with serve_script({"turns": []}) as sim, inprocess_server(tmp_path, sim.base_url, ROLES) as server:
        no_run = {"ok": False, "error": "no_run"}
        for path in ("/api/run", "/api/run/flow"):
            response = await server.get(path)
            assert (response.status_code, response.json()) == (404, no_run), path
        assert await server.json("/api/runs") == []
        assert await server.json("/api/queue") == []
        assert await server.json("/api/questions") == []
        for path in (
            f"/api/runs/{UNKNOWN_RUN}",
            f"/api/runs/{UNKNOWN_RUN}/log",
            f"/api/runs/{UNKNOWN_RUN}/flow",
            "/api/runs/nonsense",
            "/api/x",
            "/api/runs/a/b/c",
        ):
            response = await server.get(path)
            assert (response.status_code, response.json()) == (404, NOT_FOUND), path
        for method in ("POST", "PUT", "PATCH", "DELETE"):
            response = await server.http.request(method, "/api/x")
            assert (response.status_code, response.json()) == (404, NOT_FOUND), method
        response = await server.http.delete("/api/runs")  # a known path, a wrong method
        assert (response.status_code, response.json()) == (404, NOT_FOUND)

        bad_bodies: list[Any] = [
            {},
            {"task": ""},
            {"task": "   "},
            {"task": 7},
            {"task": "x", "effort": "max"},
            {"task": "x", "effort": 3},
            {"task": "x", "logLevel": "debug"},
            {"task": "x", "continuesFrom": "yesterday"},
            {"task": "x", "continuesFrom": 12},
            {"task": "x", "continuesFrom": UNKNOWN_RUN},
            ["task"],
        ]
        for body in bad_bodies:
            response = await server.post("/api/runs", body)
            assert (response.status_code, response.json()) == (400, INVALID), body
        response = await server.post("/api/runs", content=b"{not json", headers={"content-type": "application/json"})
        assert (response.status_code, response.json()) == (400, INVALID)
        assert queue_file(server.workspace) is None  # nothing was ever enqueued
        assert await server.json("/api/runs") == []

        response = await server.post(f"/api/runs/{UNKNOWN_RUN}/interrupt", {"kind": "inquiry", "message": "hi"})
        assert (response.status_code, response.json()) == (409, {"ok": False, "error": "run_not_active"})
        response = await server.post("/api/answer", {"id": "q-1", "answer": "yes"})
        assert (response.status_code, response.json()) == (404, NOT_FOUND)
        for body in ({"id": "q-1"}, {"answer": "yes"}, {"id": 1, "answer": "yes"}):
            response = await server.post("/api/answer", body)
            assert (response.status_code, response.json()) == (400, INVALID), body

        favicon = await server.get("/favicon.ico")
        assert (favicon.status_code, favicon.content) == (204, b"")
        page = await server.get("/")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert "<title>Adaptive Orchestrator</title>" in page.text
        assert page.headers["cache-control"] == "no-store"


def _run_script() -> dict[str, Any]:
    """lead → coder; the coder runs a command then finishes; the lead finishes; a model summary line."""
    return {
        "turns": [
            turn("lead", call("agent", role="coder", task="write the greeting"), content="Delegating."),
            turn("coder", call("run_shell", command="echo hello > hello.txt && echo wrote it"), reasoning="Write it."),
            turn("coder", finish("greeting written", artifacts=["hello.txt"]), last="wrote it"),
            turn("lead", finish("the greeting is in hello.txt"), last="greeting written"),
            _summary_turn("Wrote a greeting into hello.txt."),
        ]
    }


async def test_a_run_completes_and_every_view_describes_it(tmp_path: Path) -> None:
    async with serve_script(_run_script()) as sim, inprocess_server(tmp_path, sim.base_url, ROLES) as server:
        response = await server.post("/api/runs", {"task": "Write a greeting\nsecond line", "effort": "quick"})
        assert response.status_code == 201, response.text
        assert list(response.json()) == ["runId"]
        run_id = response.json()["runId"]
        assert RUN_ID.match(run_id)
        view = await server.run_status(run_id, "success")
        assert (server.workspace / "hello.txt").read_text() == "hello\n"

        async def summarized() -> list[dict[str, Any]] | None:
            runs = await server.json("/api/runs")
            return runs if runs[0]["summary"] == "Wrote a greeting into hello.txt." else None

        runs = await server.wait_for(summarized, what="the model's run summary")
        assert runs == [
            {
                "runId": run_id,
                "status": "success",
                "task": "Write a greeting\nsecond line",
                "effort": "quick",
                "startTime": view["startTime"],
                "endTime": view["endTime"],
                "result": {"status": "success", "summary": "the greeting is in hello.txt"},
                "error": None,
                "summary": "Wrote a greeting into hello.txt.",
                "continuesFrom": None,
                "continuedBy": [],
            }
        ]

        view = await server.json(f"/api/runs/{run_id}")
        assert view["status"] == "success" and view["runId"] == run_id and view["effort"] == "quick"
        assert view["continuesFrom"] is None and view["plan"] is None
        assert view["interrupts"] == [] and view["questionHistory"] == [] and view["interruptPending"] is False
        assert view["error"] is None and view["currentActivity"] is None
        assert [r["role"] for r in view["roles"]] == ["lead", "coder"]
        coder = view["roles"][1]
        assert (coder["llmCalls"], coder["toolCalls"]) == (2, 2)
        assert coder["recentTools"] == ["finish", "run_shell"]
        tree = view["roleTree"]
        assert (tree["role"], tree["depth"], tree["parent"], tree["status"]) == ("lead", 0, None, "success")
        assert tree["summary"] == "the greeting is in hello.txt" and tree["active"] is False
        (child,) = tree["children"]
        assert (child["role"], child["depth"], child["status"], child["children"]) == ("coder", 1, "success", [])
        budgets = view["budgets"]
        assert budgets["toolCalls"] == 4 and budgets["tokensUsed"] > 0 and budgets["elapsedSeconds"] >= 0
        assert set(budgets["tokenBreakdown"]) == {"promptTokens", "cachedPromptTokens", "completionTokens"}
        recent = view["recentLog"]
        assert all(set(row) == {"index", "timestamp", "type", "text"} for row in recent)
        assert [row["index"] for row in recent] == list(range(len(recent)))
        assert [row["type"] for row in recent[:4]] == ["effort_set", "role_start", "llm_call_start", "llm_call"]
        assert recent[-1]["type"] == "role_finished" and recent[-1]["text"].startswith("lead · ")
        assert "payload" not in json.dumps(recent) and "echo hello" not in json.dumps(recent)
        assert await server.json("/api/run") == await server.json(f"/api/runs/{run_id}")

        await _check_log_window(server, run_id, len(recent), await sim.responses_requests())
        await _check_flow(server, run_id)


async def _check_log_window(server: Any, run_id: str, total: int, requests: list[dict[str, Any]]) -> None:
    path = f"/api/runs/{run_id}/log"
    page = await server.json(path)
    assert (page["runId"], page["total"], page["offset"], page["limit"]) == (run_id, total, 0, 50)
    assert [e["index"] for e in page["events"]] == list(range(total))
    assert all(set(e) == {"index", "timestamp", "type", "payload"} for e in page["events"])
    events = page["events"]
    for params, offset, limit in (
        ({"offset": "2", "limit": "3"}, 2, 3),
        ({"limit": "100000"}, 0, 500),
        ({"offset": "-1", "limit": "x"}, 0, 50),
        ({"offset": "1.5", "limit": "-3"}, 0, 50),
        ({"offset": str(total + 10)}, total + 10, 50),
    ):
        window = await server.json(path, params=params)
        assert (window["total"], window["offset"], window["limit"]) == (total, offset, limit), params
        assert window["events"] == events[offset : offset + limit], params

    coder = await server.json(path, params={"instance": "coder-1-2"})
    coder_types = [e["type"] for e in coder["events"]]
    assert coder["total"] == len(coder["events"])
    assert coder_types[0] == "role_start" and coder["events"][0]["payload"]["role"] == "lead"  # the ancestor
    assert coder_types.count("llm_call") == 2 and coder_types.count("role_start") == 2
    assert all(e["payload"].get("role") in ("lead", "coder") for e in coder["events"])
    assert not [e for e in coder["events"] if e["type"] == "llm_call" and e["payload"]["role"] == "lead"]
    assert [e["index"] for e in coder["events"]] == sorted(e["index"] for e in coder["events"])
    second = await server.json(path, params={"instance": "coder-1-2", "offset": "1", "limit": "2"})
    assert second["total"] == coder["total"] and second["events"] == coder["events"][1:3]
    assert await server.json(path, params={"instance": "nobody-9-9"}) == {
        "runId": run_id,
        "total": 0,
        "offset": 0,
        "limit": 50,
        "events": [],
    }
    assert (await server.json(path, params={"instance": ""}))["total"] == total

    # The coder's second turn is logged as a delta; its detail is the full conversation the sim received.
    coder_calls = [e for e in events if e["type"] == "llm_call" and e["payload"]["role"] == "coder"]
    assert coder_calls[1]["payload"]["sentFrom"] > 0
    detail = await server.json(path, params={"detail": str(coder_calls[1]["index"])})
    assert detail["index"] == coder_calls[1]["index"]
    sections = detail["detailSections"]
    assert set(sections) >= {"sent", "received", "finishReason", "usage"}
    sent = sections["sent"]
    assert sent == coder_calls[0]["payload"]["sent"] + coder_calls[1]["payload"]["sent"]
    assert len(sent) == coder_calls[1]["payload"]["messageCount"] == 4
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    wire = next(r for r in requests if r["turn"] == 2)["body"]["input"]  # what the sim received
    assert [sent[0]["content"], sent[1]["content"]] == [wire[0]["content"], wire[1]["content"]]
    assert sent[3]["content"] == wire[-1]["output"]
    tool_call = next(e for e in events if e["type"] == "tool_call" and e["payload"]["tool"] == "run_shell")
    arguments = (await server.json(path, params={"detail": str(tool_call["index"])}))["detailSections"]["arguments"]
    assert json.loads(arguments) == {"command": "echo hello > hello.txt && echo wrote it"}
    effort = await server.json(path, params={"detail": "0"})
    assert effort == {"index": 0, "detailSections": None}
    for bad in (str(total), "-1", "x", "1.0"):
        response = await server.get(path, params={"detail": bad})
        assert (response.status_code, response.json()) == (404, NOT_FOUND), bad

    text = await server.get(path, params={"format": "text", "limit": "3", "instance": "coder-1-2"})
    assert text.status_code == 200 and text.headers["content-type"].startswith("text/plain")
    assert text.headers["content-disposition"] == f'attachment; filename="{run_id}.log"'
    lines = text.text.splitlines()
    assert len(lines) == 3
    for line, event in zip(lines, events[:3], strict=True):
        timestamp, kind, rendering = line.split("\t")
        assert (timestamp, kind) == (event["timestamp"], event["type"]) and rendering


async def _check_flow(server: Any, run_id: str) -> None:
    model = await server.json(f"/api/runs/{run_id}/flow")
    assert model == await server.json("/api/run/flow")
    participants = [p["id"] for p in model["participants"]]
    assert participants[:2] == ["human:root", "role:lead:1"] and "role:coder:1" in participants
    assert "tool:finish:1" not in participants
    operation = model["operations"][0]["id"]
    details = await server.json(f"/api/runs/{run_id}/flow", params={"operation": operation})
    assert details == {"operationId": operation, "details": details["details"], "logIndex": details["logIndex"]}
    assert isinstance(details["logIndex"], int)  # the role_start the first call was folded from
    assert "Write a greeting" in (details["details"] or "")
    response = await server.get(f"/api/runs/{run_id}/flow", params={"operation": "op-that-does-not-exist"})
    assert (response.status_code, response.json()) == (404, NOT_FOUND)
    # a short run is whole by default; a window smaller than the run keeps the newest operations
    total = len(model["operations"])
    assert (model["operationsTotal"], model["operationsOmitted"]) == (total, 0)
    assert await server.json(f"/api/runs/{run_id}/flow", params={"window": "all"}) == model
    assert await server.json(f"/api/runs/{run_id}/flow", params={"window": "bogus"}) == model
    small = await server.json(f"/api/runs/{run_id}/flow", params={"window": "1"})
    assert small["operations"][-1] == model["operations"][-1]
    assert small["operationsOmitted"] == total - len(small["operations"]) > 0


async def test_effort_and_log_level_resolve_from_settings_and_continuations_record_lineage(tmp_path: Path) -> None:
    script = {
        "turns": [
            turn("lead", finish("first result: 42")),
            turn("lead", finish("second result"), last="first result: 42"),
        ]
    }
    async with serve_script(script) as sim, inprocess_server(tmp_path, sim.base_url, ROLES) as server:
        response = await server.http.put("/api/settings", json={"effort": "thorough", "logLevel": "standard"})
        assert response.status_code == 200
        first = (await server.post("/api/runs", {"task": "compute the answer"})).json()["runId"]
        await server.run_status(first, "success")
        view = await server.json(f"/api/runs/{first}")
        assert view["effort"] == "thorough"
        events = await server.events(first)
        assert events[0]["payload"] == {"effort": "thorough"}
        llm_call = next(e for e in events if e["type"] == "llm_call")["payload"]
        assert "sent" not in llm_call and "received" not in llm_call and "usage" in llm_call  # standard level
        lead_input = (await sim.responses_requests())[0]["body"]["input"]
        assert "Quality level: thorough" in json.dumps(lead_input[:2])

        response = await server.post(
            "/api/runs", {"task": "build on it", "effort": "quick", "logLevel": "full", "continuesFrom": first}
        )
        assert response.status_code == 201, response.text
        second = response.json()["runId"]
        assert second != first
        view = await server.run_status(second, "success")
        assert (view["continuesFrom"], view["effort"]) == (first, "quick")
        meta = json.loads((server.workspace / ".orchestration" / "runs" / second / "meta.json").read_text())
        assert meta["continuesFrom"] == first and meta["task"] == "build on it"
        llm_call = next(e for e in await server.events(second) if e["type"] == "llm_call")["payload"]
        assert "sent" in llm_call  # the per-run level wins over the project default
        second_request = next(r for r in await sim.responses_requests() if r["turn"] == 1)
        first_message = second_request["body"]["input"][-1]["content"]
        assert first_message.startswith("build on it")
        assert f"[Platform briefing — this run continues run {first}]" in first_message
        assert "Prior task: compute the answer" in first_message
        assert "Prior result (success): first result: 42" in first_message
        assert [r["runId"] for r in await server.json("/api/runs")] == [second, first]
        items = await server.json("/api/queue")
        assert [(i["runId"], i["status"]) for i in items] == [(second, "done"), (first, "done")]
        assert items[0]["continuesFrom"] == first and items[0]["logLevel"] == "full"
