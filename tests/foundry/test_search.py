"""The Foundry end to end: a prompt-sensitive suite on the sim, gepa's search, a real Dask LocalCluster.

The runs' model is each benchmark's sim solution (it solves the task only when the orchestrator's prompt
holds the phrase); the reflection model is a second sim on loopback. Nothing else is scripted.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.foundry.foundry_fixtures import (
    PHRASE,
    USELESS,
    clean_env,
    deployment,
    make_guild,
    make_suite,
    reflection_script,
)
from tests.helpers import serve_script

from orchestrator.config.guild import load_guild
from orchestrator.foundry.search import FoundryError, FoundryOptions, FoundryStopped, run_foundry


def foundry_options(tmp_path: Path, suite: Path, api_base: str, **fields: Any) -> FoundryOptions:
    base: dict[str, Any] = {
        "suite": suite,
        "guild_dir": make_guild(tmp_path),
        "deployment_file": deployment(tmp_path),
        "env": clean_env(),
        "budget": 20,
        "repeats": 4,
        "workers": 2,
        "sim_solutions": True,
        "reflection_api_base": api_base,
        "out": tmp_path / "out",
    }
    base.update(fields)
    return FoundryOptions(**base)


def summary_of(out: Path) -> dict[str, Any]:
    return json.loads((out / "summary.json").read_text())


async def test_the_foundry_finds_the_missing_instruction(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    async with serve_script(reflection_script()) as reflection:
        summary, out = await run_foundry(foundry_options(tmp_path, suite, reflection.base_url))
        asked = await reflection.responses_requests()

    assert asked, "the reflection model was asked"
    data = summary_of(out)
    assert data["status"] == "finished"
    assert data["seedScore"]["mean"] == 0.0 and data["seedScore"]["runs"] == 4
    assert data["bestScore"]["mean"] == 1.0
    assert data["improved"] is True
    assert data["bestScore"]["low"] > data["seedScore"]["high"]
    assert 4 < data["metricCalls"] <= 20  # the seed's four runs, then the search (cached reuses count)
    assert data["evaluations"] == data["runs"] == 8  # what was spent: the seed's four, the candidate's four
    best = next(c for c in data["candidates"] if c["id"] == data["bestCandidate"])
    assert best["changed"] == ["prompt:prompts/orchestrator.md"]
    assert best["benchmarks"]["bench_0"]["passes"] == 4
    assert best["parent"] == data["candidates"][0]["id"]
    # best-guild/ holds the change and loads strictly
    prompt = (out / "best-guild" / "prompts" / "orchestrator.md").read_text()
    assert PHRASE in prompt
    assert load_guild(out / "best-guild").roles["orchestrator"].system_prompt == prompt
    # every run left its folder, and the cache holds the seed's four and the candidate's four
    assert sorted(p.name for p in (out / "runs" / data["candidates"][0]["id"] / "bench_0").iterdir()) == [
        "0",
        "1",
        "2",
        "3",
    ]
    assert list((out / "runs" / best["id"] / "bench_0" / "0").glob("run-*/log.jsonl"))
    assert (out / "candidates" / best["id"] / "candidate.json").is_file()
    assert summary.best_candidate == best["id"]


async def test_a_resumed_search_can_be_given_more_budget_never_less(tmp_path: Path) -> None:
    """``--resume OUT --budget N`` raises the recorded budget (kept in foundry.json for the next resume);
    a smaller one is refused before anything runs."""
    suite = make_suite(tmp_path)
    async with serve_script(reflection_script()) as reflection:
        first, out = await run_foundry(foundry_options(tmp_path, suite, reflection.base_url, budget=4))
        assert (first.metric_calls, first.improved) == (4, False)  # the seed's four runs, nothing more
        with pytest.raises(FoundryError, match=r"--budget 3 is below the resumed search's own budget of 4"):
            await run_foundry(foundry_options(tmp_path, suite, reflection.base_url, resume=out, resume_budget=3))
        second, _ = await run_foundry(
            foundry_options(tmp_path, suite, reflection.base_url, resume=out, resume_budget=20)
        )
    assert second.budget == 20
    assert json.loads((out / "foundry.json").read_text())["budget"] == 20
    assert 4 < second.metric_calls <= 20
    assert second.improved is True
    assert second.evaluations == 8  # the seed's four runs were not made again


async def test_when_nothing_helps_the_seed_stays_best_with_intervals(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    async with serve_script(reflection_script(USELESS)) as reflection:
        summary, out = await run_foundry(foundry_options(tmp_path, suite, reflection.base_url, budget=16))

    data = summary_of(out)
    seed_id = data["candidates"][0]["id"]
    assert data["improved"] is False
    assert data["bestCandidate"] == seed_id
    assert data["seedScore"] == {
        "runs": 4,
        "passes": 0,
        "mean": 0.0,
        "low": 0.0,
        "high": pytest.approx(0.4899, abs=1e-3),
    }
    assert "no candidate is better than the seed" in data["verdict"]
    assert (out / "best-guild" / "prompts" / "orchestrator.md").read_text() == "You are the orchestrator.\n"
    assert summary.improved is False


async def test_a_budget_below_one_seed_evaluation_is_refused(tmp_path: Path) -> None:
    suite = make_suite(tmp_path, 2)
    with pytest.raises(FoundryError, match=r"--budget 3 is below one evaluation of the seed: 2 benchmark\(s\) × 2"):
        await run_foundry(foundry_options(tmp_path, suite, "http://127.0.0.1:9/v1", budget=3, repeats=2))
    assert not (tmp_path / "out").exists()


async def test_an_unreachable_scheduler_is_named(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    options = foundry_options(
        tmp_path, suite, "http://127.0.0.1:9/v1", scheduler="tcp://127.0.0.1:9", connect_seconds=1.0
    )
    with pytest.raises(FoundryError, match=r"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:9"):
        await run_foundry(options)


async def test_a_reflection_model_that_is_down_stops_resumably(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    options = foundry_options(tmp_path, suite, "http://127.0.0.1:9/v1")
    with pytest.raises(
        FoundryStopped, match=r"the reflection model at http://127\.0\.0\.1:9/v1 did not answer"
    ) as info:
        await run_foundry(options)
    data = summary_of(info.value.out)
    assert data["status"] == "stopped"
    assert "--resume" in data["message"]
    assert data["seedScore"]["runs"] == 4  # the seed's runs are kept for the resumed search
    # a new search into the same folder would silently continue this one: refused, naming --resume
    with pytest.raises(FoundryError, match="already holds a Foundry search: continue it with --resume"):
        await run_foundry(options)


async def test_sim_solutions_need_a_named_reflection_model(tmp_path: Path) -> None:
    suite = make_suite(tmp_path)
    options = foundry_options(tmp_path, suite, "http://127.0.0.1:9/v1", reflection_api_base=None)
    with pytest.raises(FoundryError, match="name the reflection model with --reflection-api-base URL"):
        await run_foundry(options)
