"""The Dask task run directly: a candidate's run on a benchmark copy, validated, traced and archived."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest
from tests.foundry.foundry_fixtures import PHRASE, sim_job

from orchestrator.foundry.job import decode_outcome, encode_job, execute_job, pack_tree, unpack_tar, unpack_tree


def test_a_run_that_solves_the_benchmark_passes_with_its_trace_and_run_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    job = sim_job(tmp_path, f"You are the orchestrator. {PHRASE}\n")
    assert "eval.json" not in job.bench_files and "sim-solution.json" not in job.bench_files
    outcome = decode_outcome(execute_job(encode_job(job)))
    assert outcome.status == "pass", outcome.reasons
    assert outcome.score == 1.0 and outcome.exit_code == 0 and "FILE-0-OK" in outcome.output_tail
    (role,) = outcome.roles
    assert role.role == "orchestrator" and role.task == "Write the file out_0.txt."
    assert role.lines[0].startswith("call run_shell(")
    unpack_tar(outcome.archive, tmp_path / "runs")
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert (run_dir / "meta.json").is_file() and (run_dir / "log.jsonl").is_file()
    assert outcome.prompt_tokens > 0


def test_a_run_that_ends_error_is_not_validated(tmp_path: Path) -> None:
    outcome = decode_outcome(execute_job(encode_job(sim_job(tmp_path, "You are the orchestrator.\n"))))
    assert outcome.status == "error" and outcome.error_kind == "run"
    assert outcome.reasons == ["the run ended error: I was not told what to write (validation skipped)"]
    assert outcome.exit_code is None
    assert outcome.roles[0].lines[-1] == "finished error: I was not told what to write"


def test_a_configuration_the_worker_cannot_load_is_an_error_outcome(tmp_path: Path) -> None:
    job = msgspec.structs.replace(sim_job(tmp_path, "You are the orchestrator.\n"), deployment=b"{}")
    outcome = decode_outcome(execute_job(encode_job(job)))
    assert outcome.status == "error" and outcome.error_kind == "config"
    assert "deployment" in outcome.reasons[0].lower() or "model" in outcome.reasons[0]


def test_unpacking_refuses_a_path_outside_the_target(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="leaves the target folder"):
        unpack_tree({"../evil": b"x"}, tmp_path / "t")
    unpack_tree({"a/b.txt": b"x"}, tmp_path / "t")
    assert json.dumps(sorted(pack_tree(tmp_path / "t"))) == '["a/b.txt"]'
