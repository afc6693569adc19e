"""The suite runner end to end: real benchmarks, their sim solutions, the test Guild, validation, summary.

Each run is in-process against the sim on loopback; only the model is scripted. ``pytest`` inside the
benchmarks runs without plugin autoload so the suite stays quick on a busy machine.
"""

from __future__ import annotations

import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from tests.helpers import write_deployment

from orchestrator.errors import ConfigError
from orchestrator.foundry.runner import SuiteError, SuiteOptions, copy_benchmark, discover, run_suite

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
BENCHMARKS = REPO / "benchmarks"
GUILD = HERE / "guild"


@pytest.fixture(autouse=True)
def _quick_pytest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


def clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ORCHESTRATOR_")}
    env["ORCHESTRATOR_LLM_BACKOFF_SECONDS"] = "0.01"
    return env


def suite_of(tmp_path: Path, *names: str) -> Path:
    suite = tmp_path / "suite"
    for name in names:
        shutil.copytree(BENCHMARKS / name, suite / name)
    return suite


def options(tmp_path: Path, suite: Path, **fields: Any) -> SuiteOptions:
    deployment = write_deployment(tmp_path / "deployment.json", "http://127.0.0.1:9/v1")
    base: dict[str, Any] = {
        "suite": suite,
        "guild_dir": GUILD,
        "deployment_file": deployment,
        "env": clean_env(),
        "sim_solutions": True,
    }
    base.update(fields)
    return SuiteOptions(**base)


def summary_json(out_dir: Path) -> dict[str, Any]:
    return json.loads((out_dir / "summary.json").read_text())


async def test_python_and_javascript_benchmarks_pass_on_their_sim_solutions(tmp_path: Path) -> None:
    suite = suite_of(tmp_path, "py_fix_broken_import", "js_fix_range")
    progress = io.StringIO()
    summary, out_dir = await run_suite(options(tmp_path, suite), progress_stream=progress)

    assert out_dir.parent == suite / ".results"
    data = summary_json(out_dir)
    assert set(data) == {"suitePath", "guildPath", "startedAt", "totals", "results"}
    assert data["suitePath"] == str(suite)
    assert data["guildPath"] == str(GUILD)
    assert data["totals"] == {"pass": 2, "fail": 0, "error": 0, "total": 2}
    assert [r["benchmark"] for r in data["results"]] == ["js_fix_range", "py_fix_broken_import"]
    for result in data["results"]:
        assert set(result) == {"benchmark", "status", "runId", "tokens", "wallTimeSeconds", "reasons"}
        assert result["status"] == "pass", result
        assert result["runId"].startswith("run-")
        assert result["tokens"]["promptTokens"] > 0 and result["tokens"]["completionTokens"] > 0
        assert result["reasons"] == []
        run_copy = out_dir / result["benchmark"] / "runs" / result["runId"]
        assert (run_copy / "meta.json").is_file() and (run_copy / "log.jsonl").is_file()
    assert "# pass 4" in (out_dir / "js_fix_range" / "validation.txt").read_text()
    assert "[2/2] py_fix_broken_import: pass" in progress.getvalue()
    assert summary.all_passed
    for result in summary.results:
        assert result.workspace is not None and not result.workspace.exists()


async def test_a_wrong_solution_fails_validation_with_clear_reasons(tmp_path: Path) -> None:
    suite = suite_of(tmp_path, "js_fix_range")
    lazy = {
        "model": "sim-bench",
        "turns": [
            {
                "reusable": True,
                "expect": {"systemContains": "You are the orchestrator"},
                "toolCalls": [{"name": "finish", "arguments": {"status": "success", "summary": "Looks fine to me."}}],
            }
        ],
    }
    (suite / "js_fix_range" / "sim-solution.json").write_text(json.dumps(lazy))
    summary, out_dir = await run_suite(options(tmp_path, suite, out=tmp_path / "out"), progress_stream=None)

    assert out_dir == tmp_path / "out"
    [result] = summary_json(out_dir)["results"]
    assert result["status"] == "fail"
    assert result["reasons"] == [
        "the command exited with 1, expected 0",
        "stdout does not contain '# pass 4'",
        "stdout does not contain '# fail 0'",
    ]
    assert summary.totals() == {"pass": 0, "fail": 1, "error": 0, "total": 1}


async def test_a_run_that_does_not_succeed_is_an_error_and_skips_validation(tmp_path: Path) -> None:
    suite = suite_of(tmp_path, "js_fix_range")
    gives_up = {
        "turns": [
            {
                "reusable": True,
                "toolCalls": [{"name": "finish", "arguments": {"status": "error", "summary": "I cannot do this."}}],
            }
        ]
    }
    (suite / "js_fix_range" / "sim-solution.json").write_text(json.dumps(gives_up))
    summary, out_dir = await run_suite(options(tmp_path, suite, out=tmp_path / "out"), progress_stream=None)

    [result] = summary.results
    assert result.status == "error"
    assert result.reasons == ["the run ended error: I cannot do this. (validation skipped)"]
    assert result.command is None
    assert "exit code" not in (out_dir / "js_fix_range" / "validation.txt").read_text()


async def test_ask_human_is_answered_from_human_responses(tmp_path: Path) -> None:
    suite = suite_of(tmp_path, "ask_report_file_name")
    summary, out_dir = await run_suite(options(tmp_path, suite, keep_workspaces=True), progress_stream=None)

    [result] = summary.results
    assert result.status == "pass", result.reasons
    assert result.workspace is not None
    assert (result.workspace / "total.txt").read_text() == "42.75\n"
    log = (out_dir / "ask_report_file_name" / "runs" / result.run_id / "log.jsonl").read_text()  # type: ignore[operator]
    answers = [json.loads(line) for line in log.splitlines() if '"human_answer"' in line]
    assert [a["payload"]["answer"] for a in answers] == ["Write it to total.txt in the workspace root."]
    assert f"workspace: {result.workspace}" in (out_dir / "ask_report_file_name" / "validation.txt").read_text()
    shutil.rmtree(result.workspace)


async def test_an_unanswered_question_gets_the_fallback_and_the_run_errors(tmp_path: Path) -> None:
    suite = suite_of(tmp_path, "ask_report_file_name")
    spec_path = suite / "ask_report_file_name" / "eval.json"
    spec = json.loads(spec_path.read_text())
    spec["humanResponses"] = {"Something else entirely?": "no"}
    spec_path.write_text(json.dumps(spec))
    summary, _ = await run_suite(options(tmp_path, suite, out=tmp_path / "out"), progress_stream=None)
    [result] = summary.results
    assert result.status == "error"
    assert "a delegated role failed" in result.reasons[0]


def test_the_workspace_copy_leaves_out_the_judges_files(tmp_path: Path) -> None:
    source = tmp_path / "bench"
    (source / "src" / "__pycache__").mkdir(parents=True)
    (source / "src" / "eval.json").write_text("{}")  # only the top-level one is the judge's
    (source / "src" / "__pycache__" / "x.pyc").write_bytes(b"")
    for name in ("eval.json", "sim-solution.json", "README.md"):
        (source / name).write_text("x")
    copy_benchmark(source, tmp_path / "ws")
    found = sorted(str(p.relative_to(tmp_path / "ws")) for p in (tmp_path / "ws").rglob("*"))
    assert found == ["README.md", "src", "src/eval.json"]


def test_discover(tmp_path: Path) -> None:
    suite = suite_of(tmp_path, "js_fix_range", "py_fix_off_by_one")
    (suite / ".results").mkdir()
    (suite / "notes").mkdir()
    assert [p.name for p in discover(suite, [])] == ["js_fix_range", "py_fix_off_by_one"]
    assert [p.name for p in discover(suite, ["py_fix_off_by_one"])] == ["py_fix_off_by_one"]
    assert discover(suite / "js_fix_range", []) == [suite / "js_fix_range"]
    with pytest.raises(SuiteError, match="--only nope: no such benchmark"):
        discover(suite, ["nope"])
    with pytest.raises(SuiteError, match="no benchmark folders"):
        discover(suite / "notes", [])


async def test_invalid_files_stop_the_suite_before_anything_runs(tmp_path: Path) -> None:
    suite = suite_of(tmp_path, "js_fix_range", "py_fix_off_by_one")
    (suite / "js_fix_range" / "eval.json").write_text(json.dumps({"taskType": "x", "validation": {"command": 1}}))
    (suite / "py_fix_off_by_one" / "sim-solution.json").write_text(json.dumps({"turns": [{"fial": 1}]}))
    with pytest.raises(SuiteError) as caught:
        await run_suite(options(tmp_path, suite), progress_stream=None)
    problems = caught.value.problems
    assert problems[0].endswith("js_fix_range/eval.json: description: required (a non-empty string)")
    assert problems[1].endswith("js_fix_range/eval.json: validation.command: expected a string, got number")
    assert "turns[0].fial" in problems[2]
    assert not (suite / ".results").exists()


async def test_a_guild_that_does_not_load_stops_the_suite(tmp_path: Path) -> None:
    suite = suite_of(tmp_path, "js_fix_range")
    with pytest.raises(ConfigError):
        await run_suite(options(tmp_path, suite, guild_dir=tmp_path / "no-guild"), progress_stream=None)


async def test_a_run_past_its_timeout_is_an_error(tmp_path: Path) -> None:
    suite = suite_of(tmp_path, "js_fix_range")
    stalls = {"turns": [{"reusable": True, "fail": {"stallBeforeHeadersMs": 20000}}]}
    (suite / "js_fix_range" / "sim-solution.json").write_text(json.dumps(stalls))
    summary, out_dir = await run_suite(
        options(tmp_path, suite, out=tmp_path / "out", run_timeout=0.5), progress_stream=None
    )
    [result] = summary.results
    assert result.status == "error"
    assert result.reasons == ["the run did not finish within 0.5 s (--run-timeout)"]
    assert result.run_id is not None
    assert (out_dir / "js_fix_range" / "runs" / result.run_id / "meta.json").is_file()
