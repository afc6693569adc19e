"""``routes.toolresults``: ``GET /api/runs/<id>/toolresult`` and the log window's ``toolResults``, over a
run the real engine wrote with the sim model (shell exit 0 and 1, a read, a write over the read file, a
search), through the in-process app; plus the operation detail answer's ``logIndex``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.engine.harness import call, finish, turn
from tests.service.inprocess import BEARER, engine_run, inprocess_app

ROLES = {"coder": ["run_shell", "read_file", "write_file", "search_text", "finish"]}
SCRIPT = {
    "turns": [
        turn("coder", call("run_shell", command="echo out; echo oops >&2; exit 1"), call("read_file", path="a.txt")),
        turn(
            "coder", call("write_file", path="a.txt", content="one\nTWO\nthree\n"), call("search_text", pattern="TWO")
        ),
        turn("coder", call("run_shell", command="echo fine")),
        turn("coder", finish("done")),
    ]
}


async def _run(tmp_path: Path) -> str:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "a.txt").write_text("one\ntwo\nthree\n")
    return await engine_run(tmp_path, SCRIPT, ROLES)


async def test_tool_results_by_type_under_their_calls(tmp_path: Path) -> None:
    run_id = await _run(tmp_path)
    async with inprocess_app(tmp_path) as (_, client):

        async def get(path: str) -> tuple[int, Any]:
            response = await client.get(path, headers=BEARER)
            return response.status_code, json.loads(await response.get_data())

        status, view = await get(f"/api/runs/{run_id}")
        assert status == 200
        coder = view["roleTree"]["roleId"]
        status, window = await get(f"/api/runs/{run_id}/log?instance={coder}&limit=50")
        turns = [e for e in window["events"] if e["type"] == "llm_call"]
        assert len(turns) == 4
        first, second, third, last = (t["toolResults"] for t in turns)
        assert [(r["tool"], r["body"]["view"]) for r in last] == [("finish", "plain")]

        shell, read = first
        assert (shell["tool"], shell["kind"], shell["severity"], shell["note"]) == (
            "run_shell",
            "success",
            "warn",
            "exit 1",
        )
        assert shell["body"]["view"] == "terminal"
        (command,) = shell["body"]["commands"]
        assert command["command"] == "echo out; echo oops >&2; exit 1" and command["exitCode"] == 1
        assert (command["stdout"], command["stderr"]) == ("out\n", "oops\n")  # real text, not escaped JSON
        assert shell["callId"] == turns[0]["payload"]["received"]["toolCalls"][0]["id"]
        assert read["body"] == {
            "view": "file",
            "path": "a.txt",
            "content": "one\ntwo\nthree\n",
            "firstLine": 1,
            "totalLines": None,
            "size": 14,
            "truncated": False,
            "chars": 14,
        }

        write, search = second
        assert write["body"]["view"] == "write" and write["body"]["path"] == "a.txt"
        assert search["body"]["view"] == "search" and search["body"]["columns"] == ["path", "line", "text"]
        assert search["body"]["rows"] == [["a.txt", "2", "TWO"]]
        assert third[0]["severity"] == "ok" and third[0]["body"]["commands"][0]["exitCode"] == 0

        # the write's diff against the read before it: one changed line
        status, answer = await get(f"/api/runs/{run_id}/toolresult?event={write['index']}")
        assert status == 200 and answer["result"]["callId"] == write["callId"]
        diff = answer["diff"]
        assert diff["known"] and (diff["added"], diff["removed"]) == (1, 1)
        assert diff["previousIndex"] == read["index"]
        changed = [(line["op"], line["text"]) for line in diff["lines"] if line["op"] in "+-"]
        assert changed == [("-", "two"), ("+", "TWO")]
        status, answer = await get(f"/api/runs/{run_id}/toolresult?event={shell['callIndex']}&full=1")
        assert status == 200 and answer["diff"] is None and answer["result"]["index"] == shell["index"]

        # a turn on its own, as the inspector refreshes one
        status, answer = await get(f"/api/runs/{run_id}/toolresult?turn={turns[1]['index']}")
        assert status == 200 and [r["tool"] for r in answer["results"]] == ["write_file", "search_text"]

        for query, parameter in (
            ("turn=x", "turn"),
            ("event=-1", "event"),
            ("", "turn"),
            ("turn=1&event=2", "turn"),
            (f"event={write['index']}&full=yes", "full"),
        ):
            status, body = await get(f"/api/runs/{run_id}/toolresult?{query}")
            assert (status, body["error"], body["parameter"]) == (400, "invalid_parameter", parameter), query
        for query in ("turn=0", "event=0", "turn=999999"):
            status, body = await get(f"/api/runs/{run_id}/toolresult?{query}")
            assert (status, body["error"]) == (404, "not_found"), query
        status, body = await get("/api/runs/no-such-run/toolresult?turn=1")
        assert status == 404

        # the operation detail answer names the log index of its event
        status, flow = await get(f"/api/runs/{run_id}/flow")
        ops = {op["id"]: op for op in flow["operations"]}
        shell_call = next(
            op for op in flow["operations"] if op["kind"] == "call" and op["destination"].startswith("tool:")
        )
        status, detail = await get(f"/api/runs/{run_id}/flow?operation={shell_call['id']}")
        assert status == 200 and detail["logIndex"] == shell["callIndex"]
        assert ops
