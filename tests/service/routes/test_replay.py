"""``routes.replay``: ``GET /api/runs/<id>/replay`` through the in-process app — over a run the real engine
wrote with the sim model, and over a hand-written log still being appended to."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.engine.harness import call, finish, turn
from tests.flow.logs import log, start, tcall, tresult
from tests.service.inprocess import BEARER, engine_run, inprocess_app

from orchestrator.engine.runfolder import runs_root
from orchestrator.flow.replay import MAX_FRAMES, REPLAY_TAIL

ROLES = {"lead": ["agent", "finish"], "coder": ["run_shell", "finish"]}
SCRIPT = {
    "turns": [
        turn("lead", call("agent", role="coder", task="run the tests")),
        turn("coder", call("run_shell", command="exit 1")),
        turn("coder", call("run_shell", command="echo ok")),
        turn("coder", finish("tests pass")),
        turn("lead", finish("done"), last="tests pass"),
    ]
}


async def test_replay_frames_of_a_finished_run_end_at_its_flow_model(tmp_path: Path) -> None:
    run_id = await engine_run(tmp_path, SCRIPT, ROLES)
    async with inprocess_app(tmp_path) as (_, client):

        async def get(path: str, **headers: str) -> tuple[int, Any, dict[str, str]]:
            response = await client.get(path, headers={**BEARER, **headers})
            body = await response.get_data()
            return response.status_code, json.loads(body) if body else None, dict(response.headers)

        base = f"/api/runs/{run_id}"
        status, whole, headers = await get(f"{base}/replay?count={MAX_FRAMES}")
        assert status == 200
        _, flow, _ = await get(f"{base}/flow?window={REPLAY_TAIL}")
        total = flow["operationsTotal"]
        assert (whole["runId"], whole["status"], whole["first"], whole["operationsTotal"]) == (
            run_id, "success", 1, total,
        )  # fmt: skip
        frames = whole["frames"]
        assert len(frames) == total and [f["operationsTotal"] for f in frames] == list(range(1, total + 1))
        assert frames[-1] == flow  # the replay ends exactly where the live view is
        assert all(f["status"] == "running" for f in frames[:-1])
        # op 2 (the lead delegating to the coder) is live in frame 2: the coder's call is in flight
        second = frames[1]["operations"][-1]
        assert (second["id"], second["kind"], second["lifecycle"]) == ("op-2", "call", "in_flight")
        assert frames[1]["activeParticipant"] == second["destination"]

        status, part, _ = await get(f"{base}/replay?from=3&count=2")
        assert status == 200 and part["first"] == 3 and part["frames"] == frames[2:4]
        # chunk after chunk, as the page asks: each continues the pass the previous one stopped at
        chained = []
        for first in range(1, total + 1, 3):
            status, chunk, _ = await get(f"{base}/replay?from={first}&count=3")
            assert status == 200 and chunk["first"] == first
            chained.extend(chunk["frames"])
        assert chained == frames
        status, past, _ = await get(f"{base}/replay?from={total + 1}")
        assert status == 200 and past["frames"] == [] and past["operationsTotal"] == total

        again = await get(f"{base}/replay?count={MAX_FRAMES}", **{"if-none-match": headers["etag"]})
        assert (again[0], again[1]) == (304, None)


@pytest.mark.parametrize(
    ("query", "parameter"),
    [
        ("from=0", "from"),
        ("from=-1", "from"),
        ("from=x", "from"),
        ("from=1e3", "from"),
        ("count=0", "count"),
        (f"count={MAX_FRAMES + 1}", "count"),
        ("count=", "count"),
        ("tail=0", "tail"),
        ("tail=1001", "tail"),
    ],
)
async def test_bad_parameters_are_named_in_a_400(tmp_path: Path, query: str, parameter: str) -> None:
    run_dir = runs_root(tmp_path / "ws") / "run-20260101-000001"
    run_dir.mkdir(parents=True)
    (run_dir / "log.jsonl").write_text("")
    async with inprocess_app(tmp_path) as (_, client):
        response = await client.get(f"/api/runs/{run_dir.name}/replay?{query}", headers=BEARER)
        body = await response.get_json()
        assert response.status_code == 400
        assert (body["ok"], body["error"], body["parameter"]) == (False, "invalid_parameter", parameter)
        assert body["message"].startswith(f"{parameter} must be a whole number from 1 to ")
        missing = await client.get("/api/runs/run-20000101-000000/replay", headers=BEARER)
        assert (missing.status_code, await missing.get_json()) == (404, {"ok": False, "error": "not_found"})


async def test_a_live_run_replays_its_complete_lines_only(tmp_path: Path) -> None:
    run_dir = runs_root(tmp_path / "ws") / "run-20260101-000002"
    run_dir.mkdir(parents=True)
    events = log(start("lead"), tcall("lead", "t"), tresult("lead", "t"), tcall("lead", "t"))
    lines = [json.dumps(event) for event in events]
    path = run_dir / "log.jsonl"
    path.write_text("\n".join(lines[:3]) + "\n" + lines[3])  # the fourth line is still being written
    async with inprocess_app(tmp_path) as (_, client):
        response = await client.get(f"/api/runs/{run_dir.name}/replay?tail=1", headers=BEARER)
        chunk = await response.get_json()
        assert (chunk["status"], chunk["operationsTotal"], len(chunk["frames"])) == ("unknown", 3, 3)
        last = chunk["frames"][-1]
        assert [op["id"] for op in last["operations"]] == ["op-1", "op-3"]  # the open call, then the tail
        assert last["operationsOmitted"] == 1 and last["status"] == "unknown"
        with path.open("a") as handle:
            handle.write("\n")
        response = await client.get(f"/api/runs/{run_dir.name}/replay?from=3", headers=BEARER)
        chunk = await response.get_json()
        assert chunk["operationsTotal"] == 4 and [f["operationsTotal"] for f in chunk["frames"]] == [3, 4]
        assert chunk["frames"][0]["status"] == "running"  # op 3 is no longer the newest
