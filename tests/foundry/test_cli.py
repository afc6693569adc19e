"""``orchestrator bench`` (``orchestrator.foundry.cli.main``): output, the JSON report, exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.helpers import write_deployment

from orchestrator.foundry.cli import main

HERE = Path(__file__).resolve().parent
BENCHMARKS = HERE.parents[1] / "benchmarks"


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    suite = tmp_path / "suite"
    shutil.copytree(BENCHMARKS / "js_fix_range", suite / "js_fix_range")
    return suite


@pytest.fixture
def args(tmp_path: Path) -> list[str]:
    deployment = write_deployment(tmp_path / "deployment.json", "http://127.0.0.1:9/v1")
    return ["--guild", str(HERE / "guild"), "--deployment", str(deployment), "--sim-solutions"]


def test_json_report_and_exit_zero(
    suite: Path, args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main([str(suite), *args, "--json", "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert code == 0, err
    report = json.loads(out)
    assert report["totals"] == {"pass": 1, "fail": 0, "error": 0, "total": 1}
    assert report == json.loads((tmp_path / "out" / "summary.json").read_text())
    assert "js_fix_range  pass" in err  # the table goes to stderr with --json
    assert f"summary: {tmp_path / 'out' / 'summary.json'}" in err


def test_table_and_exit_one_when_a_benchmark_does_not_pass(
    suite: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    gives_up = {
        "turns": [
            {"reusable": True, "toolCalls": [{"name": "finish", "arguments": {"status": "error", "summary": "no"}}]}
        ]
    }
    (suite / "js_fix_range" / "sim-solution.json").write_text(json.dumps(gives_up))
    code = main([str(suite), *args, "--effort", "quick"])
    out, _ = capsys.readouterr()
    assert code == 1
    lines = out.splitlines()
    assert lines[0].split() == ["benchmark", "status", "run", "tokens", "in/out", "time", "reason"]
    assert lines[1].split()[:2] == ["js_fix_range", "error"]
    assert lines[1].endswith("the run ended error: no (validation skipped)")
    assert lines[-1] == "0 pass, 0 fail, 1 error of 1"
    [results] = list((suite / ".results").iterdir())
    meta = next((results / "js_fix_range" / "runs").iterdir()) / "meta.json"
    assert json.loads(meta.read_text())["effort"] == "quick"


def test_invalid_eval_json_exits_two_naming_the_path(
    suite: Path, args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    spec = json.loads((suite / "js_fix_range" / "eval.json").read_text())
    spec["validation"]["expectedFiles"] = ["ok", 5]
    (suite / "js_fix_range" / "eval.json").write_text(json.dumps(spec))
    assert main([str(suite), *args]) == 2
    err = capsys.readouterr().err
    assert "orchestrator bench: invalid suite:" in err
    assert "eval.json: validation.expectedFiles[1]: expected a string, got number" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--server", "http://127.0.0.1:9"], "does not combine with --server"),
        (["--only", "nope"], "--only nope: no such benchmark"),
    ],
)
def test_usage_problems_exit_two(
    suite: Path, args: list[str], extra: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(suite), *args, *extra]) == 2
    assert message in capsys.readouterr().err


def test_server_needs_its_workspace(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(suite), "--server", "http://127.0.0.1:9"]) == 2
    assert "--server needs --server-workspace DIR" in capsys.readouterr().err


def test_bad_run_timeout_is_a_usage_error(suite: Path) -> None:
    with pytest.raises(SystemExit) as caught:
        main([str(suite), "--run-timeout", "0"])
    assert caught.value.code == 2
