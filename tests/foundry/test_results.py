"""summary.json from the cache: the best candidate only when its interval clears the seed's."""

from __future__ import annotations

import json
from pathlib import Path

from orchestrator.foundry.candidate import candidate_id
from orchestrator.foundry.evalcache import EvalCache
from orchestrator.foundry.job import RunOutcome
from orchestrator.foundry.results import Lineage, build_summary, render_report, write_best_guild, write_summary

HEAD = {"suitePath": "/s", "guildPath": "/g", "budget": 40, "seed": 0}
SEED = {"prompt:p.md": "seed"}
GOOD = {"prompt:p.md": "good"}
SOME = {"prompt:p.md": "some"}
HALF = {"prompt:p.md": "half"}


def _fill(cache: EvalCache, candidate: dict[str, str], passes: list[bool]) -> None:
    for repeat, passed in enumerate(passes):
        cache.put(candidate_id(candidate), "b", repeat, RunOutcome(status="pass" if passed else "fail"))


def test_the_best_is_the_highest_mean_that_clears_the_seed(tmp_path: Path) -> None:
    cache = EvalCache(tmp_path)
    _fill(cache, SEED, [False] * 4)
    _fill(cache, GOOD, [True] * 4)
    _fill(cache, SOME, [True, True, True, False])  # 0.75, but its interval overlaps the seed's
    _fill(cache, HALF, [True, True])  # perfect on the two runs it had: not fully evaluated
    summary = build_summary(
        lineage=Lineage([SEED, SOME, GOOD, HALF], [None, 0, 1, 0]),
        benchmarks=["b"],
        repeats=4,
        cache=cache,
        problems={},
        status="finished",
        head=HEAD,
        metric_calls=14,
    )
    assert summary.best_candidate == candidate_id(GOOD) and summary.improved
    assert (summary.evaluations, summary.metric_calls) == (14, 14)  # 4 + 4 + 4 + 2 finished runs in the cache
    reports = {r.id: r for r in summary.candidates}
    assert reports[candidate_id(SOME)].better_than_seed is False
    assert reports[candidate_id(HALF)].complete is False
    assert reports[candidate_id(GOOD)].parent == candidate_id(SOME)
    assert reports[candidate_id(GOOD)].changed == ["prompt:p.md"]
    write_summary(tmp_path, summary)
    data = json.loads((tmp_path / "summary.json").read_text())
    assert data["bestScore"] == {"runs": 4, "passes": 4, "mean": 1.0, "low": 0.5101, "high": 1.0}
    text = render_report(summary)
    assert "better" in text and "(partly evaluated)" in text and "is better than the seed" in text


def test_the_seed_stays_best_when_nothing_clears_it(tmp_path: Path) -> None:
    cache = EvalCache(tmp_path)
    _fill(cache, SEED, [True, False, True, False])
    _fill(cache, SOME, [True, True, True, False])
    summary = build_summary(
        lineage=Lineage([SEED, SOME], [None, 0]),
        benchmarks=["b"],
        repeats=4,
        cache=cache,
        problems={candidate_id(SOME): []},
        status="finished",
        head=HEAD,
        metric_calls=8,
    )
    assert summary.best_candidate == candidate_id(SEED) and not summary.improved
    assert summary.verdict.startswith("no candidate is better than the seed")


def test_best_guild_is_swapped_in_whole(tmp_path: Path) -> None:
    first, second = tmp_path / "g1", tmp_path / "g2"
    for folder, text in ((first, "one"), (second, "two")):
        folder.mkdir()
        (folder / "guild.json").write_text(text)
    write_best_guild(tmp_path, first)
    write_best_guild(tmp_path, second)
    assert (tmp_path / "best-guild" / "guild.json").read_text() == "two"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best-guild", "g1", "g2"]
