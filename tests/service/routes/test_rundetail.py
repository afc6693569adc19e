"""``routes.rundetail``: ``GET /api/runs/<id>/tree``, ``/timeline`` and ``/flow``, and ETag/304 on a
finished run's answers — through the in-process app, over a run the real engine wrote with the sim model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.engine.harness import call, finish, turn
from tests.service.inprocess import BEARER, engine_run, inprocess_app

ROLES = {"lead": ["agent", "finish"], "coder": ["run_shell", "finish"]}
SCRIPT = {
    "turns": [
        turn("lead", call("agent", role="coder", task="run the tests")),
        turn("coder", call("run_shell", command="exit 1")),
        turn("coder", call("run_shell", command="no-such-command-xyz")),
        turn("coder", finish("tests fail", status="error")),
        turn("lead", finish("coder reported failing tests"), last="tests fail"),
    ]
}


async def test_tree_timeline_and_conditional_gets_of_a_finished_run(tmp_path: Path) -> None:
    run_id = await engine_run(tmp_path, SCRIPT, ROLES)
    async with inprocess_app(tmp_path) as (_, client):

        async def get(path: str, **headers: str) -> tuple[int, bytes, dict[str, str]]:
            response = await client.get(path, headers={**BEARER, **headers})
            return response.status_code, await response.get_data(), dict(response.headers)

        async def json_of(path: str) -> Any:
            status, body, _ = await get(path)
            assert status == 200, (path, body)
            return json.loads(body)

        tree = await json_of(f"/api/runs/{run_id}/tree")
        assert tree["runId"] == run_id and tree["status"] == "success"
        lead, coder = tree["nodes"]
        assert (lead["role"], coder["role"], coder["parent"]) == ("lead", "coder", lead["instanceId"])
        assert (coder["status"], coder["severity"], coder["failedBranch"]) == ("error", "fail", True)
        assert (coder["toolCalls"], coder["toolWarnings"], coder["toolFailures"]) == (2, 1, 1)
        assert lead["failedBranch"] and lead["severity"] == "ok" and lead["durationMs"] >= coder["durationMs"]

        timeline = await json_of(f"/api/runs/{run_id}/timeline")
        assert timeline["slowestPath"] == [lead["instanceId"], coder["instanceId"]]
        row = timeline["rows"][1]
        assert row["durationMs"] == coder["durationMs"]
        assert row["modelMs"] + row["toolMs"] + row["humanMs"] + row["otherMs"] >= row["durationMs"]

        flow = await json_of(f"/api/runs/{run_id}/flow")
        returns = [op for op in flow["operations"] if op["kind"] == "return" and op["source"].startswith("tool:")]
        assert [(op["outcome"], op["severity"], op["note"]) for op in returns] == [
            ("error", "warn", "exit 1"),
            ("error", "fail", "exit 127: command not found"),
        ]
        totals = {t["key"]: t for t in flow["totals"]}
        assert (totals["tool:run_shell"]["count"], totals["tool:run_shell"]["errors"]) == (2, 2)

        for path in ("", "/flow", "/log", "/tree", "/timeline"):
            status, content, headers = await get(f"/api/runs/{run_id}{path}")
            tag = headers["etag"]
            assert status == 200 and tag.startswith('"'), path
            again = await get(f"/api/runs/{run_id}{path}", **{"if-none-match": tag})
            assert (again[0], again[1], again[2]["etag"]) == (304, b"", tag), path
            stale = await get(f"/api/runs/{run_id}{path}", **{"if-none-match": '"other"'})
            assert stale[0] == 200 and stale[1] == content, path

        for path in ("tree", "timeline"):
            missing = await get(f"/api/runs/run-20000101-000000/{path}")
            assert (missing[0], json.loads(missing[1])) == (404, {"ok": False, "error": "not_found"})


async def test_flow_since_answers_full_then_deltas_and_the_run_view_can_leave_out_its_recent_log(
    tmp_path: Path,
) -> None:
    """Issue 26, item 9: ``?since=`` (empty) is the full model plus a cursor; the cursor back gets a delta
    with nothing new (a finished run: only its lingering final return), a 304 once held; a stale or
    foreign cursor the full model again; ``GET /api/runs/:id?recent=0`` answers ``recentLog: []``."""
    run_id = await engine_run(tmp_path, SCRIPT, ROLES)
    async with inprocess_app(tmp_path) as (_, client):

        async def get(path: str, **headers: str) -> tuple[int, Any, dict[str, str]]:
            response = await client.get(path, headers={**BEARER, **headers})
            data = await response.get_data()
            return response.status_code, json.loads(data) if data else None, dict(response.headers)

        base = f"/api/runs/{run_id}"
        _, plain, _ = await get(f"{base}/flow")
        status, full, _ = await get(f"{base}/flow?since=")
        assert status == 200 and full["delta"] is False and full["since"] is None
        assert len(full["participantPositions"]) == len(full["participants"])
        assert {k: v for k, v in full.items() if k not in ("cursor", "delta", "since", "participantPositions")} == plain
        status, delta, headers = await get(f"{base}/flow?since={full['cursor']}")
        assert status == 200 and delta["delta"] is True and delta["since"] == full["cursor"]
        assert delta["cursor"] == full["cursor"]  # nothing new: only what is still live (the final return)
        assert [op["id"] for op in delta["operations"]] == [f"op-{p + 1}" for p in delta["livePositions"]]
        assert len(delta["operations"]) <= 1
        assert delta["windowStart"] == 0 and delta["operationsTotal"] == plain["operationsTotal"]
        again = await get(f"{base}/flow?since={full['cursor']}", **{"if-none-match": headers["etag"]})
        assert again[0] == 304
        for stale in ("x", "abc.1.2.3", full["cursor"].split(".")[0] + ".999999.0.0"):
            status, answer, _ = await get(f"{base}/flow?since={stale}")
            assert status == 200 and answer["delta"] is False, stale
        status, view, _ = await get(f"{base}?recent=0")
        assert status == 200 and view["recentLog"] == []
        assert (await get(base))[1]["recentLog"]
