"""``GET /api/foundry``: the workspace's Foundry searches, newest first, through the token perimeter."""

from __future__ import annotations

import os
from pathlib import Path

import msgspec
from tests.foundry.foundry_fixtures import write_search
from tests.service.inprocess import inprocess_server

from orchestrator.service.routes.foundry import MAX_DIFF_CHARS, candidate_runs, component_diffs, outcome_counts

ROLES = {"lead": ["finish"]}


async def test_searches_are_listed_newest_first_and_broken_ones_left_out(tmp_path: Path) -> None:
    async with inprocess_server(tmp_path, "http://127.0.0.1:9/v1", ROLES) as server:
        workspace = server.workspace
        assert (await server.http.get("/api/foundry")).json() == {"searches": []}
        older = write_search(workspace / "benchmarks" / ".results" / "20260101-000000", improved=False)
        os.utime(older / "summary.json", (1_000_000, 1_000_000))
        write_search(workspace / ".results" / "20260102-000000")
        broken = workspace / "suite" / ".results" / "x"
        broken.mkdir(parents=True)
        (broken / "foundry.json").write_text("{}")
        (broken / "summary.json").write_text('{"status": ')
        reply = await server.http.get("/api/foundry")
        assert reply.status_code == 200
        searches = reply.json()["searches"]
        assert [s["path"] for s in searches] == [".results/20260102-000000", "benchmarks/.results/20260101-000000"]
        newest = searches[0]
        assert newest["improved"] is True and newest["bestScore"]["passes"] == 4
        assert newest["candidates"][1]["changed"] == ["prompt:prompts/orchestrator.md"]
        assert searches[1]["improved"] is False and "no candidate is better" in searches[1]["verdict"]
        tag = reply.headers["etag"]
        assert (await server.http.get("/api/foundry", headers={"If-None-Match": tag})).status_code == 304


async def test_each_candidate_has_pass_fail_error_counts_per_benchmark(tmp_path: Path) -> None:
    async with inprocess_server(tmp_path, "http://127.0.0.1:9/v1", ROLES) as server:
        folder = write_search(server.workspace / ".results" / "20260102-000000", improved=False)
        seed_id = msgspec.json.decode((folder / "summary.json").read_bytes())["candidates"][0]["id"]
        (folder / "cache" / seed_id / "bench_0" / "3.json").write_text('{"status": "error", "extra": [1]}')
        (folder / "cache" / seed_id / "bench_0" / "2.json").write_text("not json")
        seed, child = (await server.http.get("/api/foundry")).json()["searches"][0]["candidates"]
        assert seed["outcomes"] == {"bench_0": {"pass": 0, "fail": 2, "error": 1}}
        assert child["outcomes"] == {"bench_0": {"pass": 1, "fail": 3, "error": 0}}


def test_names_that_are_not_plain_folder_names_are_not_looked_up(tmp_path: Path) -> None:
    (tmp_path / "cache" / "x").mkdir(parents=True)
    (tmp_path / "cache" / "x" / "0.json").write_text('{"status": "pass"}')
    assert outcome_counts(tmp_path / "out", "..", ["cache/x"], 1) == {"cache/x": {"pass": 0, "fail": 0, "error": 0}}
    assert outcome_counts(tmp_path / "out", "../cache", ["x"], 1) == {"x": {"pass": 0, "fail": 0, "error": 0}}
    assert outcome_counts(tmp_path / "cache" / "..", "x", [".."], 1)[".."]["pass"] == 0


async def test_a_child_carries_the_diff_of_each_changed_component_against_its_parent(tmp_path: Path) -> None:
    async with inprocess_server(tmp_path, "http://127.0.0.1:9/v1", ROLES) as server:
        write_search(server.workspace / ".results" / "20260102-000000")
        seed, child = (await server.http.get("/api/foundry")).json()["searches"][0]["candidates"]
        assert seed["diffs"] == []
        [diff] = child["diffs"]
        assert diff["component"] == "prompt:prompts/orchestrator.md"
        assert diff["diff"].splitlines() == [
            "--- parent/prompt:prompts/orchestrator.md",
            "+++ child/prompt:prompts/orchestrator.md",
            "@@ -1 +1 @@",
            "-You are the orchestrator.",
            "+You are the orchestrator. Always write done.txt before you finish.",
        ]


def test_component_diffs_cover_added_and_removed_components_and_cut_long_ones() -> None:
    diffs = component_diffs({"a": "x", "gone": "old\n"}, {"a": "x", "new": "fresh"})
    assert [d["component"] for d in diffs] == ["gone", "new"]
    assert "-old\n" in diffs[0]["diff"] and "+fresh\n" in diffs[1]["diff"]
    [long] = component_diffs({}, {"big": "y\n" * MAX_DIFF_CHARS})
    assert len(long["diff"]) < MAX_DIFF_CHARS + 100 and long["diff"].endswith(f"(cut at {MAX_DIFF_CHARS} characters)\n")


async def test_the_route_needs_the_token(tmp_path: Path) -> None:
    async with inprocess_server(tmp_path, "http://127.0.0.1:9/v1", ROLES) as server:
        response = await server.app.test_client().get("/api/foundry")
        assert response.status_code == 401


def test_candidate_runs_list_each_finished_run_folder_by_its_run_view_id(tmp_path: Path) -> None:
    folder = tmp_path / "benchmarks" / ".results" / "s"
    for repeat, status in ((0, "pass"), (1, "error")):
        (folder / "cache" / "c1" / "bench_0").mkdir(parents=True, exist_ok=True)
        (folder / "cache" / "c1" / "bench_0" / f"{repeat}.json").write_text(f'{{"status": "{status}"}}')
    for name in ("run-20260102-000001", "run-20260102-000002", "not-a-run"):
        (folder / "runs" / "c1" / "bench_0" / "0" / name).mkdir(parents=True)
    (folder / "runs" / "c1" / "bench_0" / "2" / "run-20260102-000003").mkdir(parents=True)  # not finished
    runs = candidate_runs(folder, "benchmarks/.results/s", "c1", ["bench_0", "bench_1"], 3)
    prefix = "foundry~benchmarks~.results~s~c1~bench_0~0~"
    assert runs == {
        "bench_0": [
            {"repeat": 0, "status": "pass", "runId": prefix + "run-20260102-000001"},
            {"repeat": 0, "status": "pass", "runId": prefix + "run-20260102-000002"},
        ],
        "bench_1": [],
    }
    assert candidate_runs(folder, "benchmarks/.results/s", "..", ["bench_0"], 1) == {"bench_0": []}
