"""Issue 24: every run of every Foundry candidate opens in the run view. A real ``orchestrator serve`` on
loopback serves a results folder whose runs are a real sim run's folder: each run-view route answers for
the ``foundry~…`` id the Foundry route lists, the run controls refuse it, and ids that would leave the
search folder (``..``, encoded slashes, a symlinked run folder, an unlisted folder) are 404s."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import trio
from tests.foundry.foundry_fixtures import sim_run_archive, write_search
from tests.helpers import serve_script
from tests.service.server import Server, serve_process, write_config

ROLES = {"lead": ["finish"]}
SEARCH = "benchmarks/.results/20260102-000000"
NOT_FOUND = {"ok": False, "error": "not_found"}
#: every read-only run-view route, with the query each needs
ROUTES = (
    "",
    "/log",
    "/log?format=text",
    "/flow",
    "/flow?operation=op-1",
    "/tree",
    "/timeline",
    "/context",
    "/replay?from=1&count=5",
    "/search?landmarks=1",
    "/search?q=run_shell",
    "/search?operation=op-1",
)


@asynccontextmanager
async def _served(tmp_path: Path) -> AsyncIterator[tuple[Server, Path]]:
    archive = await trio.to_thread.run_sync(sim_run_archive, tmp_path / "sim")
    async with serve_script({"turns": []}) as sim:
        guild, deployment = write_config(tmp_path, sim.base_url, ROLES)
        async with serve_process(tmp_path, guild=guild, deployment=deployment) as server:
            folder = write_search(server.workspace / SEARCH, archive=archive)
            yield server, folder


async def test_every_run_view_route_answers_for_each_listed_foundry_run(tmp_path: Path) -> None:
    async with _served(tmp_path) as (server, _):
        [search] = (await server.json("/api/foundry"))["searches"]
        seed, child = search["candidates"]
        runs = child["runs"]["bench_0"]
        assert [(r["repeat"], r["status"]) for r in runs] == [(0, "pass"), (1, "pass"), (2, "pass"), (3, "pass")]
        assert [r["status"] for r in seed["runs"]["bench_0"]] == ["fail"] * 4
        run_id = runs[0]["runId"]
        assert run_id.startswith(f"foundry~benchmarks~.results~20260102-000000~{child['id']}~bench_0~0~run-")

        view = await server.json(f"/api/runs/{run_id}")
        assert view["runId"] == run_id and view["status"] == "success"
        assert view["task"] == "Write the file out_0.txt."
        assert view["foundry"] == {
            "search": SEARCH,
            "candidate": child["id"],
            "benchmark": "bench_0",
            "repeat": 0,
            "run": run_id.rsplit("~", 1)[1],
        }
        events = await server.events(run_id)
        turn = next(i for i, e in enumerate(events) if e["type"] == "llm_call")
        call = next(i for i, e in enumerate(events) if e["type"] == "tool_call")
        for route in (*ROUTES, f"/toolresult?turn={turn}", f"/toolresult?event={call}"):
            reply = await server.get(f"/api/runs/{run_id}{route}")
            assert reply.status_code == 200, (route, reply.status_code, reply.text)
        flow = await server.json(f"/api/runs/{run_id}/flow")
        assert any("echo ok > out_0.txt" in (op["subject"] or "") for op in flow["operations"])
        tree = await server.json(f"/api/runs/{run_id}/tree")
        assert tree["runId"] == run_id and tree["nodes"][0]["role"] == "orchestrator"
        replay = await server.json(f"/api/runs/{run_id}/replay")
        assert replay["operationsTotal"] == len(flow["operations"]) and replay["frames"]
        hits = await server.json(f"/api/runs/{run_id}/search?q=run_shell")
        assert hits["hits"]
        # the id as a browser may send it (each ~ escaped) names the same run; ETags work as for any run
        escaped = await server.get(f"/api/runs/{run_id.replace('~', '%7E')}/tree")
        assert escaped.status_code == 200 and escaped.json()["runId"] == run_id
        tag = escaped.headers["etag"]
        assert (await server.get(f"/api/runs/{run_id}/tree", headers={"If-None-Match": tag})).status_code == 304
        # another repeat is another run, cached apart
        other = await server.json(f"/api/runs/{runs[1]['runId']}")
        assert other["runId"] == runs[1]["runId"] and other["foundry"]["repeat"] == 1
        # the service's own run list does not hold the search's runs
        assert not any(r["runId"].startswith("foundry~") for r in await server.json("/api/runs"))


async def test_a_foundry_run_is_read_only(tmp_path: Path) -> None:
    async with _served(tmp_path) as (server, _):
        [search] = (await server.json("/api/foundry"))["searches"]
        run_id = search["candidates"][1]["runs"]["bench_0"][0]["runId"]
        for action, body in (("stop", {"by": "ui"}), ("interrupt", {"kind": "inquiry", "message": "why?"})):
            reply = await server.post(f"/api/runs/{run_id}/{action}", body)
            assert reply.status_code == 409, (action, reply.text)
            answer = reply.json()
            assert answer["error"] == "run_not_active" and answer["runId"] == run_id
            assert "not one of this service's runs" in answer["message"]
        # Continue (a new run continuing it) and Retry's run: not from a Foundry run
        reply = await server.post("/api/runs", {"task": "go on", "continuesFrom": run_id})
        assert (reply.status_code, reply.json()) == (400, {"ok": False, "error": "invalid_body"})
        assert (await server.get(f"/api/runs/{run_id}")).json()["status"] == "success"


async def test_ids_that_leave_a_listed_search_folder_are_not_found(tmp_path: Path) -> None:
    async with _served(tmp_path) as (server, folder):
        [search] = (await server.json("/api/foundry"))["searches"]
        candidate = search["candidates"][1]["id"]
        run_id = search["candidates"][1]["runs"]["bench_0"][0]["runId"]
        run_name = run_id.rsplit("~", 1)[1]
        outside = tmp_path / "outside"
        shutil.copytree(folder / "runs" / candidate / "bench_0" / "0" / run_name, outside / run_name)
        # a symlinked run folder pointing out of the search folder
        planted = folder / "runs" / candidate / "bench_0" / "7"
        planted.mkdir()
        (planted / run_name).symlink_to(outside / run_name)
        # a folder shaped like a search that the Foundry route does not list (no foundry.json)
        unlisted = server.workspace / "other" / ".results" / "x"
        shutil.copytree(folder / "runs", unlisted / "runs")
        (unlisted / "summary.json").write_text("{}")
        base = f"foundry~benchmarks~.results~20260102-000000~{candidate}~bench_0"
        refused = [
            f"{base}~7~{run_name}",
            f"foundry~other~.results~x~{candidate}~bench_0~0~{run_name}",
            f"{base}~0~..",
            f"{base}~..~{run_name}",
            f"foundry~..~.results~20260102-000000~{candidate}~bench_0~0~{run_name}",
            f"foundry~benchmarks%2F.results~20260102-000000~{candidate}~bench_0~0~{run_name}",
            f"foundry~benchmarks~.results~20260102-000000~{candidate}~bench_0~0~{run_name}%2F..%2F..%2F..",
            f"foundry~benchmarks~.results~20260102-000000~{candidate}%2F..~bench_0~0~{run_name}",
            f"{base}~00~{run_name}",
            "foundry~%2E%2E~%2E%2E",
            "foundry~",
        ]
        for bad in refused:
            for route in (*ROUTES, "/toolresult?turn=1"):
                reply = await server.get(f"/api/runs/{bad}{route}")
                assert (reply.status_code, reply.json()) == (404, NOT_FOUND), (bad, route, reply.text)
        reply = await server.post(f"/api/runs/{refused[0]}/stop", {"by": "ui"})
        assert (reply.status_code, reply.json()) == (404, NOT_FOUND)
