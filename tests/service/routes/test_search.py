"""``routes.search``: ``GET /api/runs/<id>/search`` (query, landmarks, operation lookup), its parameter
checks and ETag/304 — through the in-process app, over a run the real engine wrote with the sim model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.engine.harness import call, finish, turn
from tests.service.inprocess import BEARER, engine_run, inprocess_app

ROLES = {"lead": ["agent", "finish"], "coder": ["run_shell", "finish"]}
SCRIPT = {
    "turns": [
        turn("lead", call("agent", role="coder", task="run the tests in tests/test_dates.py")),
        turn("coder", call("run_shell", command="cat tests/test_dates.py; exit 1")),
        turn("coder", call("run_shell", command="no-such-command-xyz")),
        turn("coder", finish("tests fail", status="error")),
        turn("lead", finish("coder reported failing tests"), last="tests fail"),
    ]
}


async def test_search_landmarks_and_operation_lookup(tmp_path: Path) -> None:
    run_id = await engine_run(tmp_path, SCRIPT, ROLES)
    base = f"/api/runs/{run_id}/search"
    async with inprocess_app(tmp_path) as (_, client):

        async def get(path: str, **headers: str) -> tuple[int, bytes, dict[str, str]]:
            response = await client.get(path, headers={**BEARER, **headers})
            return response.status_code, await response.get_data(), dict(response.headers)

        async def json_of(path: str) -> Any:
            status, body, _ = await get(path)
            assert status == 200, (path, body)
            return json.loads(body)

        flow = await json_of(f"/api/runs/{run_id}/flow")
        ops = {op["id"]: op for op in flow["operations"]}

        found = await json_of(f"{base}?q=TESTS/test_dates.py")
        assert found["runId"] == run_id and found["query"] == "tests/test_dates.py" and found["nextAfter"] is None
        assert [(hit["kind"], hit["tool"], hit["field"]) for hit in found["hits"]] == [
            ("tool_call", "agent", "arguments"),
            ("role_start", None, "task"),
            ("tool_call", "run_shell", "arguments"),
            ("tool_result", "run_shell", "result"),
        ]
        shell = found["hits"][2]
        assert shell["tool"] == "run_shell" and shell["role"] == "coder" and shell["instanceId"]
        assert "tests/test_dates.py" in shell["snippet"]
        op = ops[shell["operationId"]]
        assert (op["kind"], op["destination"].split(":")[1]) == ("call", "run_shell")

        located = await json_of(f"{base}?operation={shell['operationId']}")
        assert (located["logIndex"], located["instanceId"], located["kind"]) == (
            shell["logIndex"],
            shell["instanceId"],
            "tool_call",
        )

        marks = (await json_of(f"{base}?landmarks=1"))["landmarks"]
        assert [(m["category"], m["note"]) for m in marks] == [
            ("warn", "exit 1"),
            ("fail", "exit 127: command not found"),
            ("fail", "failed"),
        ]
        for mark in marks:  # each lands on the failing return the flow model badges
            assert ops[mark["operationId"]]["severity"] == mark["category"]

        first = await json_of(f"{base}?q=tool:run_shell&limit=1")
        second = await json_of(f"{base}?q=tool:run_shell&limit=1&after={first['nextAfter']}")
        whole = await json_of(f"{base}?q=tool:run_shell")
        assert len(whole["hits"]) == 4 and whole["hits"][:2] == first["hits"] + second["hits"]

        status, _, headers = await get(f"{base}?q=exit")
        again = await get(f"{base}?q=exit", **{"if-none-match": headers["etag"]})
        assert status == 200 and (again[0], again[1]) == (304, b"")


async def test_bad_parameters_are_400s_naming_the_parameter(tmp_path: Path) -> None:
    run_id = await engine_run(tmp_path, SCRIPT, ROLES)
    base = f"/api/runs/{run_id}/search"
    async with inprocess_app(tmp_path) as (_, client):
        cases = {
            "": "q",
            "?q=a&landmarks=1": "q",
            "?q=is:bogus": "q",
            f"?q={'x' * 401}": "q",
            f"?q={'x' * 121}": "q",
            "?q=a&limit=0": "limit",
            "?q=a&limit=1001": "limit",
            "?q=a&limit=ten": "limit",
            "?q=a&after=-2": "after",
            "?q=a&after=1.5": "after",
            "?landmarks=yes": "landmarks",
            "?q=a&sort=up": "sort",
        }
        for query, parameter in cases.items():
            response = await client.get(base + query, headers=BEARER)
            body = await response.get_json()
            assert response.status_code == 400, (query, body)
            assert (body["error"], body["parameter"]) == ("invalid_parameter", parameter), query
        for path, code in ((f"{base}?operation=op-999", 404), ("/api/runs/run-20000101-000000/search?q=a", 404)):
            response = await client.get(path, headers=BEARER)
            assert response.status_code == code and (await response.get_json())["error"] == "not_found"
