"""``routes.contexttrack``: ``GET /api/runs/<id>/context`` through the in-process app, over a run the real
engine wrote with the sim model — the tracks, the budget from the settings, ``?samples`` validated, 304."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.engine.harness import call, finish, turn
from tests.service.inprocess import BEARER, engine_run, inprocess_app

ROLES = {"lead": ["agent", "finish"], "coder": ["run_shell", "finish"]}
SCRIPT = {
    "turns": [
        turn("lead", call("agent", role="coder", task="run the tests"), usage={"promptTokens": 1000}),
        *[turn("coder", call("run_shell", command="true"), usage={"promptTokens": 5000 * k}) for k in range(1, 6)],
        turn("coder", finish("tests pass"), usage={"promptTokens": 26000}),
        turn("lead", finish("done"), last="tests pass", usage={"promptTokens": 1500}),
    ]
}


async def test_context_tracks_of_a_finished_run(tmp_path: Path) -> None:
    """Issue 18 (build: the waterfall's context track): served per instance, bounded, conditional."""
    run_id = await engine_run(tmp_path, SCRIPT, ROLES)
    async with inprocess_app(tmp_path) as (_, client):

        async def get(path: str, **headers: str) -> tuple[int, Any, dict[str, str]]:
            response = await client.get(path, headers={**BEARER, **headers})
            body = await response.get_data()
            return response.status_code, json.loads(body) if body else None, dict(response.headers)

        status, answer, headers = await get(f"/api/runs/{run_id}/context")
        assert status == 200 and answer["runId"] == run_id and answer["status"] == "success"
        assert answer["threshold"] == 0.8
        lead, coder = answer["tracks"]
        assert (lead["role"], coder["role"]) == ("lead", "coder")
        assert [s[1] for s in coder["samples"]] == [5000, 10000, 15000, 20000, 25000, 26000]
        assert [s[1] for s in lead["samples"]] == [1000, 1500]
        assert [m["kind"] for m in coder["marks"]] == ["pressure"]  # 25000 ≥ 0.8 × 28672
        assert coder["marks"][0]["tokens"] == 25000
        assert (coder["budget"], coder["budgetSource"]) == (28672, "logged")
        assert (lead["budget"], lead["budgetSource"]) == (28672, "run")  # the coder's logged budget
        assert coder["peakTokens"] == 26000 and coder["peakPercent"] == 91
        offsets = [s[0] for s in coder["samples"]]
        assert offsets == sorted(offsets) and coder["samples"][0][0] >= lead["samples"][0][0]

        status, small, _ = await get(f"/api/runs/{run_id}/context?samples=4")
        coder_small = small["tracks"][1]
        assert status == 200 and len(coder_small["samples"]) == 4 and coder_small["turns"] == 6
        assert max(s[1] for s in coder_small["samples"]) == 26000 and coder_small["marks"] == coder["marks"]

        again = await get(f"/api/runs/{run_id}/context", **{"if-none-match": headers["etag"]})
        assert (again[0], again[1]) == (304, None)

        for bad in ("3", "1001", "x", "-5", "", "2.5", "%D9%A3"):
            status, error, _ = await get(f"/api/runs/{run_id}/context?samples={bad}")
            assert status == 400 and error["error"] == "invalid_parameter" and error["parameter"] == "samples", bad
            assert "4 to 1000" in error["message"]

        missing = await get("/api/runs/run-20000101-000000/context")
        assert (missing[0], missing[1]) == (404, {"ok": False, "error": "not_found"})
