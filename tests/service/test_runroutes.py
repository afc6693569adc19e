"""``GET /api/runs/<id>/tree`` and ``/timeline``, and ETag/304 on a finished run's answers — against a real
``orchestrator serve`` process serving a run the real engine wrote with the sim model."""

from __future__ import annotations

from pathlib import Path

from tests.engine.harness import FAST, call, finish, turn
from tests.helpers import make_settings, serve_script
from tests.service.server import serve_process, write_config

from orchestrator.engine.runner import RunRequest, RunServices, execute_run

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


async def _finished_run(tmp_path: Path) -> tuple[Path, str]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with serve_script(SCRIPT) as sim:
        settings = make_settings(tmp_path, sim.base_url, roles=ROLES)
        outcome = await execute_run(settings, workspace, RunRequest(task="go"), RunServices(timeouts=FAST))
    return workspace, outcome.run_dir.name


async def test_tree_timeline_and_conditional_gets_of_a_finished_run(tmp_path: Path) -> None:
    workspace, run_id = await _finished_run(tmp_path)
    async with serve_script({"turns": []}) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        async with serve_process(tmp_path, guild=guild, deployment=deployment, workspace=workspace) as server:
            tree = await server.json(f"/api/runs/{run_id}/tree")
            assert tree["runId"] == run_id and tree["status"] == "success"
            lead, coder = tree["nodes"]
            assert (lead["role"], coder["role"], coder["parent"]) == ("lead", "coder", lead["instanceId"])
            assert (coder["status"], coder["severity"], coder["failedBranch"]) == ("error", "fail", True)
            assert (coder["toolCalls"], coder["toolWarnings"], coder["toolFailures"]) == (2, 1, 1)
            assert lead["failedBranch"] and lead["severity"] == "ok" and lead["durationMs"] >= coder["durationMs"]

            timeline = await server.json(f"/api/runs/{run_id}/timeline")
            assert timeline["slowestPath"] == [lead["instanceId"], coder["instanceId"]]
            row = timeline["rows"][1]
            assert row["durationMs"] == coder["durationMs"]
            assert row["modelMs"] + row["toolMs"] + row["humanMs"] + row["otherMs"] >= row["durationMs"]

            flow = await server.json(f"/api/runs/{run_id}/flow")
            returns = [op for op in flow["operations"] if op["kind"] == "return" and op["source"].startswith("tool:")]
            assert [(op["outcome"], op["severity"], op["note"]) for op in returns] == [
                ("error", "warn", "exit 1"),
                ("error", "fail", "exit 127: command not found"),
            ]
            totals = {t["key"]: t for t in flow["totals"]}
            assert (totals["tool:run_shell"]["count"], totals["tool:run_shell"]["errors"]) == (2, 2)

            for path in ("", "/flow", "/log", "/tree", "/timeline"):
                first = await server.get(f"/api/runs/{run_id}{path}")
                tag = first.headers["etag"]
                assert first.status_code == 200 and tag.startswith('"'), path
                again = await server.get(f"/api/runs/{run_id}{path}", headers={"if-none-match": tag})
                assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", tag), path
                stale = await server.get(f"/api/runs/{run_id}{path}", headers={"if-none-match": '"other"'})
                assert stale.status_code == 200 and stale.content == first.content, path

            for path in ("tree", "timeline"):
                missing = await server.get(f"/api/runs/run-20000101-000000/{path}")
                assert (missing.status_code, missing.json()) == (404, {"ok": False, "error": "not_found"})
