"""``orchestrator bench --repeats K --guild A --guild B``: two Guilds on the same suite, with intervals."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.foundry.foundry_fixtures import PHRASE, deployment, make_guild, make_suite

from orchestrator.foundry.cli import main
from orchestrator.foundry.compare import compare
from orchestrator.foundry.report import BenchResult, SuiteSummary


@pytest.fixture(autouse=True)
def _quick_pytest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    for name in ("ORCHESTRATOR_API_BASE", "ORCHESTRATOR_MODEL", "ORCHESTRATOR_GUILD_DIR"):
        monkeypatch.delenv(name, raising=False)


def test_a_guild_that_solves_the_suite_is_better_beyond_the_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = make_suite(tmp_path, 2)
    first = make_guild(tmp_path)
    second = tmp_path / "tuned"
    shutil.copytree(first, second)
    (second / "prompts" / "orchestrator.md").write_text(f"You are the orchestrator. {PHRASE}\n")
    out = tmp_path / "out"
    args = [str(suite), "--guild", str(first), "--guild", str(second), "--repeats", "2"]
    code = main([*args, "--deployment", str(deployment(tmp_path)), "--sim-solutions", "--json", "--out", str(out)])
    stdout, stderr = capsys.readouterr()
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report == json.loads((out / "comparison.json").read_text())
    a, b = report["guilds"]
    assert (a["label"], a["guildPath"], a["score"]["passes"], a["score"]["runs"]) == ("A", str(first), 0, 4)
    assert (b["label"], b["score"]["passes"], b["betterThanFirst"]) == ("B", 4, True)
    assert b["benchmarks"]["bench_0"] == {"runs": 2, "passes": 2, "mean": 1.0, "low": 0.3424, "high": 1.0}
    assert report["verdict"] == "better than A beyond its 95 % interval: B"
    assert (out / "B" / "repeat-2" / "summary.json").is_file()
    assert "better than A" in stderr  # the table goes to stderr with --json


def test_comparing_does_not_combine_with_a_service(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = make_suite(tmp_path)
    guild = make_guild(tmp_path)
    server = ["--server", "http://127.0.0.1:9", "--server-workspace", str(tmp_path / "ws")]
    code = main(
        [str(suite), "--guild", str(guild), "--repeats", "2", "--deployment", str(deployment(tmp_path)), *server]
    )
    assert code == 2
    assert "do not combine with --server" in capsys.readouterr().err


def test_overlapping_intervals_are_no_verdict() -> None:
    def summary(*statuses: str) -> SuiteSummary:
        results = [BenchResult(benchmark=f"b{i}", status=s) for i, s in enumerate(statuses)]  # type: ignore[arg-type]
        return SuiteSummary(suite_path="/s", guild_path="/g", started_at="", results=results)

    comparison = compare("/s", 1, {"A": ("/a", [summary("pass", "fail")]), "B": ("/b", [summary("pass", "pass")])})
    assert not comparison.guilds[1].better_than_first
    assert comparison.verdict.startswith("no Guild is better than A")
